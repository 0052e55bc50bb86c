package osupdate

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The chroot runner on real parts: the fake tools, built static, run
// chrooted into a root folder as the daemon runs the node's tools.
func TestChrootRunner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	root := fakeRoot(t)
	run := Chroot{Root: root}
	if !run.Has("rpm-ostree") || run.Has("bootc") {
		t.Errorf("Has: rpm-ostree %v, bootc %v", run.Has("rpm-ostree"), run.Has("bootc"))
	}
	ctx := context.Background()
	u, err := Detect(ctx, root, run, fastRetry)
	if err != nil || Name(u) != "rpm-ostree" {
		t.Fatalf("Detect = %s, %v", Name(u), err)
	}
	if b, err := u.Booted(ctx, "quay.io/os@sha256:1"); err != nil || !b.IsImage {
		t.Errorf("Booted = %+v, %v", b, err)
	}
	// A failure carries the command line, the exit code and stderr, cut.
	long := strings.Repeat("x", 2000)
	_, err = run.Run(ctx, "rpm-ostree", "kargs", "--delete="+long)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode() != 1 || !strings.Contains(err.Error(), "running rpm-ostree kargs --delete=xxx") ||
		!strings.Contains(err.Error(), "error: No key '"+long[:100]) || !strings.Contains(err.Error(), "more bytes]") {
		t.Errorf("error %v", err)
	}
	if len(err.Error()) > 2*stderrMax+2100 {
		t.Errorf("error of %d bytes", len(err.Error()))
	}
	if _, err := run.Run(ctx, "bootc", "status"); err == nil || !strings.Contains(err.Error(), "bootc is not installed on the node") {
		t.Errorf("missing tool: %v", err)
	}
}

// Only a command that ran and failed is retried: not one that timed out or
// whose caller gave up. Each failed attempt is logged.
func TestRetryOnlyFailures(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		tries int
	}{
		{"exit status", &CommandError{Command: "rpm-ostree rebase x", Err: errors.New("exit status 1"), Stderr: "pinging container registry"}, 3},
		{"timeout", &CommandError{Command: "rpm-ostree rebase x", Err: &timeoutError{time.Minute}, Stderr: "Pulling"}, 1},
		{"cancelled", &CommandError{Command: "rpm-ostree rebase x", Err: context.Canceled}, 1},
		{"not a command", errors.New("no such program"), 1},
	}
	for _, tt := range tests {
		core, logs := observer.New(zap.WarnLevel)
		r := fastRetry
		r.Log = zap.New(core)
		tries := 0
		err := r.do(context.Background(), "pulling OS image x", func() error { tries++; return tt.err })
		if tries != tt.tries || !errors.Is(err, tt.err) {
			t.Errorf("%s: %d tries, %v; want %d", tt.name, tries, err, tt.tries)
		}
		if logs.Len() != tt.tries {
			t.Errorf("%s: %d log lines, want %d", tt.name, logs.Len(), tt.tries)
		}
	}
	err := &CommandError{Command: "bootc switch x", Err: &timeoutError{time.Minute}, Stderr: "layers needed: 52"}
	if err.Error() != "running bootc switch x: timed out after 1m0s: layers needed: 52" {
		t.Errorf("timeout error %q", err.Error())
	}
}

func TestCutKeepsCharacters(t *testing.T) {
	if got := cut("ab€cd", 3); got != "ab... [5 more bytes]" {
		t.Errorf("cut = %q", got)
	}
	if got := cut("abc", 3); got != "abc" {
		t.Errorf("cut = %q", got)
	}
}
