package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/daemon/eta"
	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// plan --root-mount predicts from the node's own history, as its daemon.
func TestPlanETAFromTheNodesHistory(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "var/lib/nodeconfd")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	h := eta.History{}
	h.Add(eta.KindReboot, eta.Sample{Phases: map[string]float64{progress.StepDrain: 20, progress.StepReboot: 70}})
	if err := os.WriteFile(filepath.Join(state, eta.FileName), h.Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	host, err := hostfs.OpenReadOnly(root)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	var errOut bytes.Buffer
	reboot := plan.PostAction{Kind: plan.ActionReboot, Drain: true}
	e := planETA(host, reboot, now, &errOut)
	if e.PostAction != eta.KindReboot || e.Seconds != 90 || e.BasedOn != 1 || !e.EstimatedFinish.Equal(now.Add(90*time.Second)) {
		t.Errorf("from the node's history: %+v, %s", e, errOut.String())
	}
	if e := planETA(nil, reboot, now, &errOut); e.BasedOn != 0 || e.Seconds != 196 {
		t.Errorf("off the node: %+v, want the defaults (196 s)", e)
	}
}
