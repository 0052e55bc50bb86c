package phases_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
)

// observer records what the runner tells it, one line a call.
type observer struct{ calls []string }

func (o *observer) PhaseStarted(p string)               { o.calls = append(o.calls, "start "+p) }
func (o *observer) PhaseDone(p string, _ time.Duration) { o.calls = append(o.calls, "done "+p) }
func (o *observer) UpdateFinished(r string)             { o.calls = append(o.calls, "finished "+r) }
func (o *observer) Waiting(r string)                    { o.calls = append(o.calls, fmt.Sprintf("waiting %q", r)) }

func (o *observer) count(prefix string) int {
	n := 0
	for _, c := range o.calls {
		if len(c) >= len(prefix) && c[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

func TestObserverUpdateSucceeded(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	r := newRunner(configs{"a": empty, "b": file("/etc/containers/registries.d/a.yaml", "x")}, h, &cluster{},
		&systemdtest.Fake{}, &writes{})
	o := &observer{}
	r.Env.Observer = o
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(o.calls, "start write") || !slices.Contains(o.calls, "done write") {
		t.Errorf("calls %v: want the write phase started and done", o.calls)
	}
	if s, d := o.count("start "), o.count("done "); s != d || s == 0 {
		t.Errorf("%d phases started, %d done: want all that started done", s, d)
	}
	if slices.Contains(o.calls, "start drain") {
		t.Errorf("calls %v: a skipped phase (drain) reported", o.calls)
	}
	if last := o.calls[len(o.calls)-1]; last != "finished succeeded" || o.count("finished ") != 1 {
		t.Errorf("calls %v: want one finished succeeded, last", o.calls)
	}
}

func TestObserverUpdateFailed(t *testing.T) {
	for _, tc := range []struct {
		name, desired, result string
	}{
		{"write fails", file("/etc/b", "2"), phases.ResultFailed},
		{"config refused", `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"relative"}]}}`, phases.ResultRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}, failOn: "/etc/b"}
			r := newRunner(configs{"a": empty, "b": tc.desired}, h, &cluster{}, &systemdtest.Fake{}, &writes{})
			o := &observer{}
			r.Env.Observer = o
			err := r.Run(context.Background())
			if err == nil {
				t.Fatal("Run: no error")
			}
			if o.count("finished ") != 0 {
				t.Errorf("calls %v: finished before Fail", o.calls)
			}
			r.Fail(context.Background(), err)
			if want := "finished " + tc.result; o.count("finished ") != 1 || o.calls[len(o.calls)-1] != want {
				t.Errorf("calls %v: want one %q, last", o.calls, want)
			}
		})
	}
}

// A Wait need only report its reason: the runner ends the wait when the
// Wait returns, and a superseded update finishes as such.
func TestObserverWaitSuperseded(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, &cluster{}, &systemdtest.Fake{}, &writes{})
	o := &observer{}
	r.Env.Observer = o
	changed := make(chan struct{})
	r.Stop = stopOn(t, context.Background(), changed)
	r.Env.Waits = holding(func() { close(changed) })
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrSuperseded) {
		t.Fatalf("Run: %v, want ErrSuperseded", err)
	}
	want := []string{`waiting ""`, "finished superseded"}
	if got := o.calls[len(o.calls)-2:]; !slices.Equal(got, want) {
		t.Errorf("calls %v: want them to end with %v", o.calls, want)
	}
}

// Without an Observer the runner tells nothing, and phases see a no-op one.
func TestObserverNone(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	r := newRunner(configs{"a": empty, "b": empty}, h, &cluster{}, &systemdtest.Fake{}, &writes{})
	if r.Observer() == nil {
		t.Fatal("Observer() is nil without one")
	}
	r.Observer().Waiting(phases.WaitDrainBlocked)
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// failedElsewhere is a probe on whose config another node failed the gate
// once, until the wait's first answer.
type failedElsewhere struct{ *probe }

func (failedElsewhere) WaitNotFailedOn(_ context.Context, _ string, failedOn func(string)) error {
	failedOn("other")
	return nil
}

// The health wait (a config failed the gate elsewhere) tells the Observer
// it waits, and the runner ends the wait once it returns.
func TestObserverHealthWait(t *testing.T) {
	r, _, _, _ := gateRunner(t, &probe{})
	r.Env.Health.Probe = failedElsewhere{&probe{}}
	o := &observer{}
	r.Env.Observer = o
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	i := slices.Index(o.calls, fmt.Sprintf("waiting %q", phases.WaitFailedElsewhere))
	if i < 0 || i+1 >= len(o.calls) || o.calls[i+1] != `waiting ""` {
		t.Errorf("calls %v: want the wait said, then ended", o.calls)
	}
}
