package daemon

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The check command asks for a reboot when it exits 0, not when it exits
// otherwise; one that cannot run is logged.
func TestRebootCheckCommand(t *testing.T) {
	run := func(ctx context.Context, argv []string) error { return exec.CommandContext(ctx, argv[0], argv[1:]...).Run() }
	core, logs := observer.New(zap.WarnLevel)
	now := time.Date(2026, 12, 4, 16, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		argv []string
		want string
		warn bool
	}{
		{[]string{"true"}, "command true exited 0 at 2026-12-04T16:00:00Z", false},
		{[]string{"false"}, "", false},
		{[]string{"/nonexistent/needs-reboot"}, "", true},
	} {
		d := &Daemon{RebootCommand: tc.argv, RunCommand: run, Now: func() time.Time { return now }}
		before := logs.Len()
		if got := d.commandRequest(context.Background(), zap.New(core)); got != tc.want {
			t.Errorf("%v: request %q, want %q", tc.argv, got, tc.want)
		}
		if warned := logs.Len() > before; warned != tc.warn {
			t.Errorf("%v: warned %v, want %v", tc.argv, warned, tc.warn)
		}
	}
	if d := (&Daemon{}); d.commandRequest(context.Background(), zap.NewNop()) != "" || d.idleDelay() != 0 {
		t.Error("no command, no sentinel: a request, or a periodic check")
	}
	d := &Daemon{RebootCommand: strings.Fields("true")}
	if got := d.idleDelay(); got != DefaultRebootCheckInterval {
		t.Errorf("idle delay with a command %s", got)
	}
}
