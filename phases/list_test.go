package phases_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

func names(list []phases.Item) []string {
	var out []string
	for _, p := range engine.Steps(list) {
		out = append(out, p.Name)
	}
	return out
}

// Every variant of the update is the one list (List): without the cluster
// it is the list less the steps that need one, so a new step reaches
// start --once-from unless it says it needs the cluster; the image-mode
// status and the skipped reboot change a step, not the list.
func TestListVariants(t *testing.T) {
	all := names(phases.All())
	if got := names(phases.List(phases.ListOptions{ImageModeStatus: true, SkipReboot: true})); !slices.Equal(got, all) {
		t.Errorf("variants changed the steps: %v, want %v", got, all)
	}
	want := []string{"detect", "prepare", "write", "reboot", "reload-crio", "post-action", "validate", "finish", "resume"}
	if got := names(phases.List(phases.ListOptions{NoCluster: true})); !slices.Equal(got, want) {
		t.Errorf("without the cluster: %v, want %v", got, want)
	}
	for _, p := range engine.Steps(phases.OnceFrom(true)) {
		if p.Name == "reboot" && p.Show.Starting != "Skipping the reboot (--skip-reboot)" {
			t.Errorf("reboot with SkipReboot starts %q", p.Show.Starting)
		}
	}
	if got := names(phases.OnceFrom(false)); !slices.Equal(got, want) {
		t.Errorf("--once-from: %v, want %v", got, want)
	}
}

// A made-up step is one value and one line in a copy of the list: the
// runner runs it in its place, records it, and shows it in its group's
// condition like any other.
func TestAddedStepRuns(t *testing.T) {
	ran := false
	audit := phases.Step{
		Name: "audit", Show: phases.Show{Starting: "Auditing"},
		Run: func(context.Context, phases.Data) (phases.Outcome, error) {
			ran = true
			return phases.Outcome{Message: "Audited"}, nil
		},
	}
	list := engine.Insert(phases.All(), "validate", phases.Item(audit)) // the one line

	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/var/lib/kubelet/config.json", "x")}, h, cl, units, w)
	r.Phases = list
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the added step did not run")
	}
	if st := r.Record.Step("audit"); st == nil || st.Message != "Audited" {
		t.Errorf("the record has %+v for the added step", st)
	}
	if g := engine.Places(list)["audit"].Group; g != status.UpdateComplete {
		t.Errorf("the added step is in group %q", g)
	}
}

// A made-up gate is one more value in the list too, before a step that
// holds something (here a lease) before anything is written and gives it
// back in its Cut's Undo. A new desired config during the gate's wait cuts
// the step: the runner calls the Undo with the cause and stops the run,
// with nothing written.
func TestAddedGateIsUndone(t *testing.T) {
	var held, undone atomic.Bool
	var cause error
	changed := make(chan struct{})
	gate := phases.Gate{Name: "lease-free", Wait: func(ctx context.Context, _ phases.Data) error {
		held.Store(true)
		close(changed) // the desired config changes while the gate waits
		<-ctx.Done()   // the runner ends the wait for the cut
		return ctx.Err()
	}}
	lease := phases.Step{
		Name: "lease", Show: phases.Show{Starting: "Holding the lease"},
		Cut: &phases.Cut{Undo: func(_ context.Context, _ phases.Data, c error) (phases.Settles, error) {
			undone.Store(held.Load())
			cause = c
			return phases.Settles{}, nil
		}},
		Run: func(context.Context, phases.Data) (phases.Outcome, error) {
			return phases.Outcome{}, errors.New("the gate ran after it was cut")
		},
	}
	list := engine.Insert(phases.All(), "prepare", gate, lease) // the one line

	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/var/lib/kubelet/config.json", "x")}, h, cl, units, w)
	r.Phases = list
	r.Stop = stopOn(t, context.Background(), changed)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrSuperseded) {
		t.Fatalf("Run: %v, want ErrSuperseded", err)
	}
	if !undone.Load() || !errors.Is(cause, phases.ErrSuperseded) {
		t.Errorf("Undo called: %v, with cause %v; want it called with ErrSuperseded", undone.Load(), cause)
	}
	if r.Record.Done("lease") || len(h.written) != 0 {
		t.Errorf("after the cut: steps %+v, written %v", r.Record.Steps, h.written)
	}
}
