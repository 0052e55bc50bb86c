package osupdate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

// shellRoot makes a root folder with /bin/sh and sleep (copied from the
// host, with the libraries they load) and the script as /usr/bin/<name>.
func shellRoot(t *testing.T, name, script string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	root := t.TempDir()
	var files []string
	for _, bin := range []string{"/bin/sh", "/bin/sleep", "/usr/bin/setsid"} {
		real, err := filepath.EvalSymlinks(bin)
		if err != nil {
			t.Skip(err)
		}
		out, err := exec.Command("ldd", real).Output()
		if err != nil {
			t.Skipf("ldd %s: %v", real, err)
		}
		files = append(files, bin)
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, "/") {
				files = append(files, f)
			}
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, "usr", strings.TrimPrefix(strings.TrimPrefix(f, "/usr"), "/"))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	// The shell points a background job's input at /dev/null.
	if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(filepath.Join(root, "dev/null"), syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin", name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// groupAlive lists the processes of group pgid that are not zombies
// (killed, not yet reaped by whoever inherited them).
func groupAlive(pgid int) []string {
	entries, _ := os.ReadDir("/proc")
	var alive []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			alive = append(alive, e.Name()+" "+fields[0])
		}
	}
	return alive
}

// readPids reads the "shell grandchild" pids the script wrote.
func readPids(t *testing.T, root string) (int, int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "pids"))
	if err != nil {
		t.Fatalf("the script wrote no pids: %v", err)
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		t.Fatalf("pids %q", data)
	}
	sh, _ := strconv.Atoi(f[0])
	child, _ := strconv.Atoi(f[1])
	return sh, child
}

// A command that hangs with a grandchild holding its standard output is
// killed at its timeout with its whole process group: Run returns within
// the timeout and WaitDelay, and no process of the group survives.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	root := shellRoot(t, "hang", "#!/bin/sh\nsleep 3600 &\necho $$ $! >/pids\necho started\nwait\n")
	run := Chroot{Root: root, Timeout: 2 * time.Second, WaitDelay: time.Second}
	start := time.Now()
	out, err := run.Run(context.Background(), "hang")
	took := time.Since(start)
	var te *timeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "running hang: timed out after 2s") {
		t.Errorf("error %v, want a timeout", err)
	}
	if string(out) != "started\n" {
		t.Errorf("output %q", out)
	}
	// Generous: without the group kill Run waits for the hour-long sleep.
	if took > run.Timeout+run.WaitDelay+30*time.Second {
		t.Errorf("Run took %s", took)
	}
	sh, child := readPids(t, root)
	if sh == child {
		t.Fatal("no grandchild")
	}
	if alive := gone(groupAlive, sh); len(alive) > 0 {
		t.Errorf("processes of the command's group still alive: %v", alive)
	}
}

// A command that exits while a process it started holds its output: Run
// returns after WaitDelay with an error saying so, and kills the group.
func TestExitedCommandHoldingOutput(t *testing.T) {
	root := shellRoot(t, "leave", "#!/bin/sh\nsleep 3600 &\necho $$ $! >/pids\necho done\nexit 0\n")
	run := Chroot{Root: root, Timeout: time.Hour, WaitDelay: time.Second}
	start := time.Now()
	_, err := run.Run(context.Background(), "leave")
	if err == nil || !strings.Contains(err.Error(), "still held its output 1s after it exited") {
		t.Errorf("error %v", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("Run took %s", took)
	}
	sh, _ := readPids(t, root)
	if alive := gone(groupAlive, sh); len(alive) > 0 {
		t.Errorf("processes of the command's group still alive: %v", alive)
	}
}

// A timed-out rpm-ostree transaction is cancelled (`rpm-ostree cancel`),
// so the next one is not refused; a timed-out read cancels nothing.
func TestTimedOutTransactionCancelled(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	root := fakeRoot(t)
	run := Chroot{Root: root, Timeout: 3 * time.Second, WaitDelay: time.Second}
	u := &RpmOstree{Run: run, Retry: fastRetry}
	if err := os.WriteFile(filepath.Join(root, osfake.HangFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	image := "quay.io/os@sha256:2"
	_, err := u.Stage(ctx, phases.OSChange{Image: image})
	if err == nil || !strings.Contains(err.Error(), "timed out after 3s") ||
		!strings.Contains(err.Error(), "rpm-ostree cancel: Cancelling transaction: rebase --experimental -- ostree-unverified-registry:"+image+" Cancelled.") {
		t.Fatalf("Stage: %v", err)
	}
	if alive := gone(rootAlive, root); len(alive) > 0 {
		t.Errorf("processes of the timed-out command still alive: %v", alive)
	}
	calls := invocations(t, root)
	if last := calls[len(calls)-1]; last != `["rpm-ostree","cancel"]` {
		t.Errorf("last call %s, want rpm-ostree cancel", last)
	}
	if msg, err := u.Stage(ctx, phases.OSChange{Image: image}); err != nil || !strings.Contains(msg, "Staged OS image") {
		t.Errorf("Stage after the cancel: %q, %v", msg, err)
	}
	// Without a cancel the transaction would still block the next one.
	if err := os.WriteFile(filepath.Join(root, osfake.TransactionFile), []byte("upgrade"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(ctx, "rpm-ostree", "cleanup", "-p"); err == nil ||
		!strings.Contains(err.Error(), "Transaction in progress: upgrade You can cancel the current transaction with `rpm-ostree cancel`") {
		t.Errorf("a transaction while another runs: %v", err)
	}
	if out, err := run.Run(ctx, "rpm-ostree", "cancel"); err != nil || string(out) != "Cancelling transaction: upgrade\nCancelled.\n" {
		t.Errorf("cancel: %q, %v", out, err)
	}
	if out, err := run.Run(ctx, "rpm-ostree", "cancel"); err != nil || string(out) != "No active transaction.\n" {
		t.Errorf("cancel with none active: %q, %v", out, err)
	}
}

func fakeRoot(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "osfake")
	build := exec.Command("go", "build", "-o", bin, "github.com/nodeconfd/nodeconfd/test/testbed/osfake/cmd/nodeconfd-osfake")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fake: %v\n%s", err, out)
	}
	root := t.TempDir()
	for _, d := range []string{"usr/bin", "run", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := osfake.Install(root, bin, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:quay.io/os@sha256:1"}); err != nil {
		t.Fatal(err)
	}
	return root
}

func invocations(t *testing.T, root string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, osfake.InvocationsFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func TestTransactionCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"rebase", "--experimental", "x"}, true},
		{[]string{"cleanup", "-p"}, true},
		{[]string{"kargs", "--append=a"}, true},
		{[]string{"kargs", "--delete-if-present=a"}, true},
		{[]string{"kargs", "--deploy-index=1"}, false},
		{[]string{"kargs"}, false},
		{[]string{"status", "--json"}, false},
		{[]string{"cancel"}, false},
		{nil, false},
	} {
		if got := transaction(tc.args); got != tc.want {
			t.Errorf("transaction(%q) = %v", tc.args, got)
		}
	}
}

// rootAlive lists the processes, not zombies, chrooted into root.
func rootAlive(root string) []string {
	entries, _ := os.ReadDir("/proc")
	var alive []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if r, err := os.Readlink(filepath.Join("/proc", e.Name(), "root")); err != nil || r != root {
			continue
		}
		if data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !strings.Contains(string(data), ") Z ") {
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			alive = append(alive, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return alive
}

// gone waits a while for killed processes to go (SIGKILL takes effect
// asynchronously) and returns those still alive.
func gone[T any](alive func(T) []string, of T) []string {
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := alive(of)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}
