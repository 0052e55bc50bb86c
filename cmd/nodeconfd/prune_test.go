package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgfake "github.com/openshift/client-go/machineconfiguration/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
)

// nodeconfd prune: a dry run lists every rendered config with what it
// would do and why, deleting nothing; --confirm deletes the same ones,
// each with its UID and resourceVersion as preconditions.
func TestPruneCommand(t *testing.T) {
	yes := true
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	mc := func(c string, min int, owned bool) *mcfgv1.MachineConfig {
		m := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-" + strings.Repeat(c, 32),
			UID: types.UID("uid-" + c), ResourceVersion: "rv-" + c, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(min) * time.Minute))}}
		if owned {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "machineconfiguration.openshift.io/v1",
				Kind: "MachineConfigPool", Name: "worker", UID: "p", Controller: &yes}}
		}
		return m
	}
	name := func(c string) string { return "rendered-worker-" + strings.Repeat(c, 32) }
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	pool.Spec.Configuration.Name, pool.Status.Configuration.Name = name("4"), name("4")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1", Annotations: map[string]string{
		"machineconfiguration.openshift.io/currentConfig": name("0"), "machineconfiguration.openshift.io/desiredConfig": name("4")}}}
	objs := []runtime.Object{pool, mc("0", 0, true), mc("1", 1, true), mc("2", 2, true), mc("3", 3, true), mc("4", 4, true),
		mc("9", 0, false), &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-worker-ssh"}}}
	mcfg := mcfgfake.NewClientset(objs...)
	var deletes []k8stesting.DeleteActionImpl
	mcfg.PrependReactor("delete", "machineconfigs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deletes = append(deletes, a.(k8stesting.DeleteActionImpl))
		return false, nil, nil
	})
	api := kubetest.API(k8sfake.NewClientset(node), mcfg)
	ctx := context.Background()

	var out bytes.Buffer
	if err := pruneConfigs(ctx, api, pruneOptions{keep: 1}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"keep    " + name("4") + "  worker  2025-01-01T00:04:00Z  in use: pool worker's spec.configuration",
		"keep    " + name("3") + "  worker  2025-01-01T00:03:00Z  unused, among the newest 1 unused of pool worker",
		"delete  " + name("2") + "  worker  2025-01-01T00:02:00Z  unused, older than the newest 1 unused of pool worker",
		"delete  " + name("1"),
		"keep    " + name("0") + "  worker  2025-01-01T00:00:00Z  in use: node w1's currentConfig",
		"keep    " + name("9") + "  -       2025-01-01T00:00:00Z  not created by the controller",
		"2 of 6 rendered configs would be deleted (a dry run",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "99-worker-ssh") || len(deletes) != 0 {
		t.Errorf("a dry run deleted %d configs, or listed a fragment:\n%s", len(deletes), out.String())
	}

	out.Reset()
	if err := pruneConfigs(ctx, api, pruneOptions{keep: 1, confirm: true}, &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range deletes {
		got = append(got, d.Name)
		p := d.DeleteOptions.Preconditions
		c := strings.TrimPrefix(d.Name, "rendered-worker-")[:1]
		if p == nil || p.UID == nil || string(*p.UID) != "uid-"+c || p.ResourceVersion == nil || *p.ResourceVersion != "rv-"+c {
			t.Errorf("delete of %s: preconditions %+v", d.Name, p)
		}
	}
	if want := []string{name("2"), name("1")}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("deleted %q, want %q", got, want)
	}
	if !strings.Contains(out.String(), "deleted  "+name("2")) || !strings.Contains(out.String(), "Deleted 2 of 6 rendered configs.") {
		t.Errorf("--confirm's output:\n%s", out.String())
	}
}

func TestPruneFlags(t *testing.T) {
	if o, err := parsePruneFlags(nil, io.Discard); err != nil || o.keep != defaultRetention || o.confirm {
		t.Errorf("defaults: %+v, %v; want keep %d and a dry run", o, err, defaultRetention)
	}
	if _, err := parsePruneFlags([]string{"--keep", "-1"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--keep -1") {
		t.Errorf("--keep -1: %v, want an error naming the flag", err)
	}
	if _, err := parsePruneFlags([]string{"extra"}, io.Discard); err == nil {
		t.Error("an argument accepted")
	}
}
