package faultpoint

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cases := []struct {
		spec  string
		point string
		n     int
		bad   bool
	}{
		{spec: "done:write", point: "done:write", n: 1},
		{spec: "file-written:200", point: "file-written", n: 200},
		{spec: "ran:reboot:2", point: "ran:reboot", n: 2},
		{spec: "journal-append", point: "journal-append", n: 1},
		{spec: ":3", bad: true},
		{spec: "x:0", bad: true},
	}
	for _, c := range cases {
		point, n, err := Parse(c.spec)
		if c.bad {
			if err == nil {
				t.Errorf("Parse(%q) = %q, %d; want an error", c.spec, point, n)
			}
			continue
		}
		if err != nil || point != c.point || n != c.n {
			t.Errorf("Parse(%q) = %q, %d, %v; want %q, %d", c.spec, point, n, err, c.point, c.n)
		}
	}
}

func TestUnset(t *testing.T) {
	t.Setenv(EnvVar, "")
	if f, err := FromEnv(); f != nil || err != nil {
		t.Errorf("FromEnv() with the variable unset = %v, %v; want nil, nil", f != nil, err)
	}
}

func TestCountsHits(t *testing.T) {
	t.Setenv(EnvVar, "file-written:1000")
	f, err := FromEnv()
	if err != nil || f == nil {
		t.Fatalf("FromEnv() = %v, %v", f != nil, err)
	}
	for range 999 {
		f("file-written") // below the count: goes on
	}
	f("done:write") // another point: goes on
}

func TestBothArmed(t *testing.T) {
	t.Setenv(EnvVar, "done:write")
	t.Setenv(PauseEnvVar, "file-written")
	if f, err := FromEnv(); f != nil || err == nil {
		t.Errorf("FromEnv() with both variables set = %v, %v; want an error", f != nil, err)
	}
}

func TestPauseMalformed(t *testing.T) {
	t.Setenv(PauseEnvVar, "x:0")
	if f, err := FromEnv(); f != nil || err == nil || !strings.Contains(err.Error(), PauseEnvVar) {
		t.Errorf("FromEnv() = %v, %v; want an error naming %s", f != nil, err, PauseEnvVar)
	}
}

// TestPauseUntilSIGTERM sends this process real SIGTERMs until the paused
// point goes on. The test's own handler keeps a signal sent before the
// hook's is in place from ending the process.
func TestPauseUntilSIGTERM(t *testing.T) {
	t.Setenv(PauseEnvVar, "file-written:2")
	f, err := FromEnv()
	if err != nil || f == nil {
		t.Fatalf("FromEnv() = %v, %v", f != nil, err)
	}
	mine := make(chan os.Signal, 1)
	signal.Notify(mine, syscall.SIGTERM)
	defer signal.Stop(mine)
	f("file-written") // the first hit: goes on
	f("done:write")   // another point: goes on
	returned := make(chan struct{})
	go func() {
		f("file-written")
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("the second hit went on before any SIGTERM")
	case <-time.After(50 * time.Millisecond):
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-returned:
			f("file-written") // the third hit: goes on
			return
		case <-tick.C:
			if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("the paused point did not go on after SIGTERM")
		}
	}
}
