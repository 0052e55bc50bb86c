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
//   - the Go heap it no longer uses (a collection, then free pages back to
//     the OS: debug.FreeOSMemory);
//   - the pages of its own executable that the kernel mapped for that work.
//     Code runs from the executable's page cache, and every page touched
//     maps the 64 KiB around it, so start-up alone maps most of the binary
//     (about 16 MiB) and keeps it mapped, and so resident, for as long as
//     the daemon lives. MADV_PAGEOUT asks the kernel to reclaim those pages
//     now (pages another process also maps are left alone); what the idle
//     daemon runs comes back at its first use, the rest at the next update.
//
// It reports the executable's resident pages before and after, in KiB.
func Release() (before, after int, err error) {
	debug.FreeOSMemory()
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

// ErrUnsupported is Release's error on a kernel without MADV_PAGEOUT
// (before Linux 5.4): the heap was still returned.
var ErrUnsupported = errors.New("the kernel cannot reclaim pages on request (MADV_PAGEOUT needs Linux 5.4)")

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

// residentKiB is the resident size of exe's read-only mappings, from
// /proc/self/smaps.
func residentKiB(exe string) (int, error) {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("reading the memory map: %w", err)
	}
	total, in := 0, false
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Bytes()
		f := bytes.Fields(line)
		switch {
		case len(f) >= 5 && bytes.IndexByte(f[0], '-') > 0 && !bytes.HasSuffix(f[0], []byte(":")):
			in = len(f) >= 6 && string(f[5]) == exe && bytes.IndexByte(f[1], 'w') < 0
		case in && len(f) == 3 && string(f[0]) == "Rss:":
			kb, err := strconv.Atoi(string(f[1]))
			if err != nil {
				return 0, fmt.Errorf("parsing %q of smaps: %w", line, err)
			}
			total += kb
		}
	}
	return total, nil
}
