package phases

import (
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// someOS is an OS updater that is never called.
type someOS struct{ OSUpdater }

// The two views of an update's ports: the rollback's write sees no OS
// updater (the OS goes back through the updater's own rollback, never
// through a write), the image-mode write sees one that reports the split;
// neither changes the ports the runner gives the other steps.
func TestViewsOfThePorts(t *testing.T) {
	r := &Runner{Env: Env{Ports: Ports{OS: someOS{}, Policy: plan.DefaultPolicy()}}, Record: progress.New("a", "b")}
	if os := reverse(r).Ports().OS; os != nil {
		t.Errorf("the rollback's write sees OS updater %T, want none", os)
	}
	if _, ok := (splitData{Data: r, started: map[string]bool{}}).Ports().OS.(splitOS); !ok {
		t.Error("the image-mode write does not see the split's OS updater")
	}
	if _, ok := r.Ports().OS.(someOS); !ok {
		t.Errorf("the runner's ports changed: OS %T", r.Ports().OS)
	}
}
