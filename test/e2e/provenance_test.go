package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/render"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Issue 41: a node applies a rendered config only when it is the merge of
// its pool's MachineConfigs (--verify-rendered-configs, on by default and
// off elsewhere on this bed, whose tests write rendered configs by hand).
// On a real node with its pod's token: the pool's own render is applied;
// a config named and owned as the controller would make it but carrying a
// file no fragment has (what a stolen controller token could create) is
// refused in prepare, naming the config and the field, with nothing
// written and no cordon; the config the node ran before is taken back
// after the fragments changed (the controller's SLO rollback).
func TestRenderedConfigVerified(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const pool, dir = "pv1", "/etc/machine-config-daemon/no-reboot/"
	config(t, "rendered-pv1-base", ign(nil))
	createPool(ctx, t, pool)
	fragment := provenanceFragment(ctx, t, "99-pv1-a", pool, dir+"pv1", "first\n")
	first := renderPool(ctx, t, pool, nil)
	n, log := nodeOpts(t, pool, "rendered-pv1-base", testbed.NodeOptions{ExtraArgs: []string{"--pool", pool,
		"--allowed-config-pattern", plan.DefaultConfigPattern, "--verify-rendered-configs=true"}})

	// The pool's render is applied.
	if err := n.SetDesired(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, first); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, n, dir+"pv1"); got != "first\n" {
		t.Fatalf("%s holds %q", dir+"pv1", got)
	}

	// A rendered config that adds a file is refused, naming the field.
	rogue := renderPool(ctx, t, pool, map[string]string{dir + "rogue": "planted\n"})
	from := log.Len()
	if err := n.SetDesired(ctx, rogue); err != nil {
		t.Fatal(err)
	}
	// The refusal as written: each retry's prepare sets UpdateCompatible
	// Unknown again.
	st, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "NodeDegraded")
		return c != nil && c.Status == "True" && strings.Contains(c.Message, rogue)
	})
	if err != nil {
		t.Fatal(err)
	}
	c := testbed.Find(st, "UpdateCompatible")
	want := `MachineConfig "` + rogue + `": spec.config.storage.files: not the merge of pool pv1's MachineConfigs`
	if c == nil || c.Status != "False" || !strings.Contains(c.Message, want) {
		t.Errorf("UpdateCompatible = %+v, want False with %q", c, want)
	}
	if _, err := os.Lstat(n.Sys.Root + dir + "rogue"); err == nil {
		t.Error("the refused config's file was written")
	}
	if getNode(t, pool).Spec.Unschedulable {
		t.Error("node cordoned for a refused config")
	}

	// The administrator changes the fragment: its new render is applied;
	// then the config the node ran before is handed back, and taken.
	fragment.Spec.Config.Raw = []byte(ign(map[string]string{dir + "pv1": "second\n"}))
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Update(ctx, fragment, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := renderPool(ctx, t, pool, nil)
	for _, step := range []struct{ config, content string }{{second, "second\n"}, {first, "first\n"}} {
		if err := n.SetDesired(ctx, step.config); err != nil {
			t.Fatal(err)
		}
		if err := waitCurrent(ctx, log, step.config); err != nil {
			t.Fatal(err)
		}
		if got := readNodeFile(t, n, dir+"pv1"); got != step.content {
			t.Errorf("on %s, %s holds %q, want %q", step.config, dir+"pv1", got, step.content)
		}
	}
}

// createPool creates a MachineConfigPool that selects the fragments of its
// role, as the shipped pools do.
func createPool(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: render.PoolSelector(name),
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}}}}
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// provenanceFragment creates an administrator's MachineConfig of pool's
// role with one file.
func provenanceFragment(ctx context.Context, t *testing.T, name, pool, path, content string) *mcfgv1.MachineConfig {
	t.Helper()
	mc := testbed.MachineConfig(name, ign(map[string]string{path: content}))
	mc.Labels = map[string]string{render.RoleLabel: pool}
	out, err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// renderPool renders pool's fragments as the controller does (with extra
// files in one more fragment, when given) and creates the rendered config.
func renderPool(ctx context.Context, t *testing.T, pool string, extra map[string]string) string {
	t.Helper()
	var more []*mcfgv1.MachineConfig
	if len(extra) > 0 {
		mc := testbed.MachineConfig("zz-"+pool+"-extra", ign(extra))
		mc.Labels = map[string]string{render.RoleLabel: pool}
		more = append(more, mc)
	}
	name, err := bed.RenderPool(ctx, pool, more...)
	if err != nil {
		t.Fatal(err)
	}
	return name
}
