package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// etaDone checks what the nodes' MachineConfigNodes and their pool say of
// the update to config once it is done, as the DaemonSet's daemons and the
// Deployment's controller wrote it: status.updateETA with the update's
// start and finish and no estimate left; no estimate in the pool's
// Updating message. (test/controller TestRolloutETA checks the estimates
// while a rollout runs, and measures them.)
func etaDone(ctx context.Context, t *testing.T, pool, config string, names []string) {
	t.Helper()
	for _, name := range names {
		var m mcnStatus
		// Read as JSON: openshift/api's types have no updateETA. The last
		// status write of an update follows the Done state the pool counts.
		err := waitFor(ctx, func() bool {
			m = mcnStatus{} // a key absent from this read must not keep the last read's value
			raw, err := bed.MCfg.MachineconfigurationV1().RESTClient().Get().Resource("machineconfignodes").Name(name).DoRaw(ctx)
			return err == nil && json.Unmarshal(raw, &m) == nil && m.Status.ConfigVersion.Current == config &&
				m.Status.UpdateETA != nil && !m.Status.UpdateETA.Finished.IsZero()
		})
		e := m.Status.UpdateETA
		switch {
		case err != nil:
			t.Errorf("node %s: MachineConfigNode on %q, updateETA %+v; want the finish of the update to %s", name,
				m.Status.ConfigVersion.Current, e, config)
		case !e.EstimatedFinish.IsZero() || e.Started.IsZero() || e.Finished.Before(e.Started):
			t.Errorf("node %s: updateETA %+v once done; want its start, its finish and no estimate", name, e)
		}
	}
	p, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == mcfgv1.MachineConfigPoolUpdating && strings.Contains(c.Message, "expected to finish") {
			t.Errorf("pool %s updated, still says %q", pool, c.Message)
		}
	}
}

// mcnStatus is what etaDone reads of a MachineConfigNode.
type mcnStatus struct {
	Status struct {
		ConfigVersion struct {
			Current string `json:"current"`
		} `json:"configVersion"`
		UpdateETA *struct {
			Started, EstimatedFinish, Finished time.Time
		} `json:"updateETA"`
	} `json:"status"`
}

// waitFor polls ok every 200 ms for at most 30 s.
func waitFor(ctx context.Context, ok func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for !ok() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}
