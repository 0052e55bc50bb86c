package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/phases/render"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// clusterFragment is the worker pool's one MachineConfig in
// TestDaemonSetOnRealNodes, replaced at each step (renderConfig).
const clusterFragment = "99-worker-cluster"

// pauseWorkers pauses the worker pool, so that the controller renders its
// configs but hands none out: the test hands each to the nodes it picks.
// The daemons check each config against the pool's MachineConfigs
// (--verify-rendered-configs, on as shipped). Once the test's nodes are
// gone, its fragment is deleted and the pool unpaused.
func pauseWorkers(ctx context.Context, t *testing.T) {
	t.Helper()
	pools := bed.MCfg.MachineconfigurationV1().MachineConfigPools()
	pause := func(ctx context.Context, on bool) error {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"paused": on}})
		_, err := pools.Patch(ctx, "worker", types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	if err := pause(ctx, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Delete(ctx, clusterFragment, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", clusterFragment, err)
		}
		if err := pause(ctx, false); err != nil {
			t.Errorf("unpausing the worker pool: %v", err)
		}
	})
}

// renderConfig makes ignition the worker pool's one MachineConfig (created
// or replaced) and returns the rendered config the controller makes of it.
func renderConfig(ctx context.Context, t *testing.T, ignition string) string {
	t.Helper()
	mcs := bed.MCfg.MachineconfigurationV1().MachineConfigs()
	mc := testbed.MachineConfig(clusterFragment, ignition)
	mc.Labels = map[string]string{render.RoleLabel: "worker"}
	want, err := render.Render("worker", []*mcfgv1.MachineConfig{mc}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	old, err := mcs.Get(ctx, clusterFragment, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = mcs.Create(ctx, mc, metav1.CreateOptions{})
	case err == nil:
		mc.ResourceVersion = old.ResourceVersion
		_, err = mcs.Update(ctx, mc, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	name := want.Config.Name
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, "worker", metav1.GetOptions{})
		return err == nil && p.Spec.Configuration.Name == name, err
	})
	if err != nil {
		t.Fatalf("waiting for the controller to render %s: %v", name, err)
	}
	return name
}
