package osupdate

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

// Issue 27: a command whose child leaves the process group (setsid, with
// its output elsewhere) is killed at its timeout with that child: the
// cgroup holds it. Without the cgroup the child survives (shown first, so
// the test proves what the cgroup adds).
func TestTimeoutKillsSetsidChild(t *testing.T) {
	cg, err := newCmdCgroup()
	if err != nil {
		t.Skipf("no cgroup v2 to make: %v", err)
	}
	if err := cg.remove(); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nsetsid sleep 3600 </dev/null >/dev/null 2>&1 &\necho $$ $! >/pids\nsleep 3600\n"
	for _, withCgroup := range []bool{false, true} {
		root := shellRoot(t, "escape", script)
		run := Chroot{Root: root, Timeout: time.Second, WaitDelay: time.Second, Cgroup: withCgroup}
		_, err := run.Run(context.Background(), "escape")
		var te *timeoutError
		if !errors.As(err, &te) {
			t.Fatalf("cgroup %v: error %v, want a timeout", withCgroup, err)
		}
		_, child := readPids(t, root)
		// setsid forks when it is a group leader: the sleep is its child
		// or itself; its session is its own either way.
		var escaped []int
		for _, pid := range sessionOf(child) {
			if alive(pid) {
				escaped = append(escaped, pid)
			}
		}
		for deadline := time.Now().Add(5 * time.Second); withCgroup && len(escaped) > 0 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			escaped = slicesAlive(escaped)
		}
		switch {
		case withCgroup && len(escaped) > 0:
			t.Errorf("the setsid child %v survived the cgroup's kill", escaped)
		case !withCgroup && len(escaped) == 0:
			t.Errorf("the setsid child died without the cgroup: the test shows nothing")
		}
		for _, pid := range escaped {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// sessionOf returns pid and the processes whose parent it is.
func sessionOf(pid int) []int {
	pids := []int{pid}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			n, _ := strconv.Atoi(e.Name())
			pids = append(pids, n)
		}
	}
	return pids
}

func slicesAlive(pids []int) []int {
	var out []int
	for _, p := range pids {
		if alive(p) {
			out = append(out, p)
		}
	}
	return out
}

// The cgroup of a command is gone once Run returns, whatever it left.
func TestCgroupRemoved(t *testing.T) {
	cg, err := newCmdCgroup()
	if err != nil {
		t.Skipf("no cgroup v2 to make: %v", err)
	}
	if err := cg.remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.dir); !os.IsNotExist(err) {
		t.Errorf("cgroup %s left: %v", cg.dir, err)
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"ok\n  fine\t":                   "ok fine",
		"\x1b[2J\x1b]0;title\x07cleared": "[2J ]0;title cleared",
		"bidi \u202eevil":                "bidi evil",
		"bad \xff utf8 \u0085c1":         "bad utf8 c1",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
