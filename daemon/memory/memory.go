// Package memory gives back to the kernel the memory an idle daemon holds
// only because of work it has finished.
package memory

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// Release returns what the daemon's last burst of work (start-up, an
// update) left behind once it settles into idling:
//   - the pages of its own executable that the kernel mapped for that work.
//     Code runs from the executable's page cache, and every page touched
//     maps the 64 KiB around it, so start-up alone maps most of the binary
//     (about 16 MiB) and keeps it mapped, and so resident, for as long as
//     the daemon lives, as mapped code: the cache the kernel keeps
//     longest. MADV_PAGEOUT asks the kernel to reclaim them now: they
//     are unmapped from the daemon, and what stays in the page cache is
//     ordinary cache, reclaimed first under pressure. What the idle daemon
//     runs comes back at its first use, the rest at the next update. The
//     kernel leaves alone the pages another process also maps, and
//     reclaims file pages only for a process that owns the file or may
//     write it (the daemon runs as root); an executable replaced on disk
//     since the start no longer matches and is left alone too.
//   - the Go heap it no longer uses (a collection, then free pages back to
//     the OS: debug.FreeOSMemory), last, so that it also frees what Release
//     itself allocated.
//
// It reports the executable's resident KiB before and after.
func Release() (before, after int, err error) {
	defer debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, 0, fmt.Errorf("finding the executable: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, 0, fmt.Errorf("reading the memory map: %w", err)
	}
	before, err = residentKiB(exe)
	if err != nil {
		return 0, 0, err
	}
	for _, m := range executableMappings(maps, exe) {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_PAGEOUT); errno != 0 {
			if errors.Is(errno, unix.EINVAL) {
				return before, before, ErrUnsupported
			}
			return before, before, fmt.Errorf("reclaiming the executable's pages at %#x: %w", m.start, errno)
		}
	}
	after, err = residentKiB(exe)
	return before, after, err
}

// ErrUnsupported is Release's error when the kernel refuses MADV_PAGEOUT
// (EINVAL: a kernel before Linux 5.4, locked memory, or a sandbox such as
// gVisor); the heap is still returned.
var ErrUnsupported = errors.New("the kernel refused to reclaim pages on request (MADV_PAGEOUT: EINVAL)")

type mapping struct{ start, end uintptr }

// executableMappings are the read-only mappings of exe (its code and
// constant data) in maps, the text of /proc/self/maps. Writable ones hold
// the program's variables and are never touched.
func executableMappings(maps []byte, exe string) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// 00400000-00d7b000 r-xp 00000000 fd:01 1234   /path/to/exe
		f := bytes.Fields(sc.Bytes())
		if len(f) < 6 || string(f[5]) != exe || bytes.IndexByte(f[1], 'w') >= 0 {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, mapping{uintptr(start), uintptr(end)})
	}
	return out
}

// residentKiB is the resident size of exe's read-only mappings, read from
// /proc/self/smaps line by line (it is large; no copy of it is kept).
func residentKiB(exe string) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("reading the memory map: %w", err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		fields := bytes.Fields(line)
		switch {
		case len(fields) >= 5 && bytes.IndexByte(fields[0], '-') > 0 && !bytes.HasSuffix(fields[0], []byte(":")):
			in = len(fields) >= 6 && string(fields[5]) == exe && bytes.IndexByte(fields[1], 'w') < 0
		case in && len(fields) == 3 && string(fields[0]) == "Rss:":
			kb, err := strconv.Atoi(string(fields[1]))
			if err != nil {
				return 0, fmt.Errorf("parsing %q of smaps: %w", line, err)
			}
			total += kb
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading the memory map: %w", err)
	}
	return total, nil
}
