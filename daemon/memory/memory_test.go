package memory

import (
	"errors"
	"os"
	"reflect"
	"syscall"
	"testing"
)

func TestExecutableMappings(t *testing.T) {
	maps := []byte(`00400000-00d7b000 r-xp 00000000 fd:01 1234                               /usr/bin/nodeconfd
00d7b000-017b0000 r--p 0097b000 fd:01 1234                               /usr/bin/nodeconfd
017b0000-01800000 rw-p 013b0000 fd:01 1234                               /usr/bin/nodeconfd
01800000-01900000 rw-p 00000000 00:00 0
c000000000-c004000000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 fd:01 99                          /usr/bin/nodeconfd-other
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
`)
	got := executableMappings(maps, "/usr/bin/nodeconfd")
	want := []mapping{{0x400000, 0xd7b000}, {0xd7b000, 0x17b0000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

// Release on this very test binary: its pages mapped so far are reclaimed.
func TestRelease(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc/self/smaps")
	}
	// The kernel reclaims a file's pages only for its owner (or a writer).
	if st, err := os.Stat("/proc/self/exe"); err != nil {
		t.Fatal(err)
	} else if uid := st.Sys().(*syscall.Stat_t).Uid; os.Geteuid() != 0 && int(uid) != os.Geteuid() {
		t.Skipf("the test binary belongs to uid %d, not to this user", uid)
	}
	before, after, err := Release()
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if before <= 0 || after >= before {
		t.Fatalf("executable resident KiB: before %d, after %d", before, after)
	}
	t.Logf("executable resident: %d KiB before, %d KiB after", before, after)
}
