package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodeconfd/nodeconfd/test/testbed"
	"github.com/nodeconfd/nodeconfd/test/testbed/corpus"
	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

// hostileNode is the node the corpus cases of one OS kind run on, one
// case after another, with the base config it recovers to.
type hostileNode struct {
	n    *testbed.Node
	log  *testbed.StatusLog
	base string
}

// Issue 10: every hostile config of the corpus (test/e2e/testdata/hostile)
// is refused in prepare on a real systemd node: UpdateCompatible=False
// naming the object and the field, NodeDegraded=True, the state annotation,
// the node never cordoned, no reboot, the canary absent; then the node
// recovers to its base config. The cases of one OS kind share a node, one
// case after another; those of no OS updater, most of the corpus, are
// shared out to hostileShards nodes, which run side by side.
func TestHostileCorpus(t *testing.T) {
	t.Parallel()
	cases, err := corpus.Load("testdata/hostile")
	if err != nil {
		t.Fatal(err)
	}
	var shards []string // in order of first case
	byShard := map[string][]corpus.Case{}
	for i, c := range cases {
		shard := c.OS
		if shard == "" {
			shard = strconv.Itoa(i % hostileShards)
		}
		if byShard[shard] == nil {
			shards = append(shards, shard)
		}
		byShard[shard] = append(byShard[shard], c)
	}
	for _, shard := range shards {
		t.Run(shard, func(t *testing.T) {
			t.Parallel()
			hn := startHostileNode(t, shard, byShard[shard][0].OS)
			for _, c := range byShard[shard] {
				t.Run(strings.TrimSuffix(c.File, ".yaml"), func(t *testing.T) { runHostile(t, hn, c) })
			}
		})
	}
}

// hostileShards is how many nodes share out the cases of no OS updater.
const hostileShards = 4

// startHostileNode starts the node of a shard of one OS kind ("" for none,
// else "rpm-ostree" or "bootc"), running its base config.
func startHostileNode(t *testing.T, shard, kind string) *hostileNode {
	t.Helper()
	name, base, image := "hostile-"+shard, "hostile-base", ""
	opts := testbed.NodeOptions{}
	if kind != "" {
		name, base, image = "hostile-"+kind, "hostile-base-"+kind, osImageA
		fake := osfake.Options{Image: "ostree-unverified-registry:" + osImageA, Kargs: baseKargs}
		fake.RpmOstree, fake.Bootc = kind == "rpm-ostree", kind == "bootc"
		opts.OS = &fake
	}
	mc := testbed.MachineConfig(base, ign(nil))
	mc.Spec.OSImageURL = image
	if err := bed.CreateConfig(context.Background(), mc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	n, log := nodeOpts(t, name, base, opts)
	return &hostileNode{n: n, log: log, base: base}
}

// runHostile applies one case and checks that it is refused as the corpus
// says, then brings the node back to its base config.
func runHostile(t *testing.T, hn *hostileNode, c corpus.Case) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, log := hn.n, hn.log
	undo, err := corpus.Setup(n.Sys.Root, c.Setup)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := undo.Run(); err != nil {
			t.Errorf("undoing the setup: %v", err)
		}
	}()
	if err := bed.CreateConfig(ctx, c.Config.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	boot, err := n.Sys.BootID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	from := log.Len()
	if err := n.SetDesired(ctx, c.Config.Name); err != nil {
		t.Fatal(err)
	}
	// The first failure, or the hostile config applied: either ends the wait.
	st, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		d, u := testbed.Find(st, "NodeDegraded"), testbed.Find(st, "Updated")
		applied := st.ConfigVersion != nil && st.ConfigVersion.Current == c.Config.Name && u != nil && u.Status == "True"
		return (d != nil && d.Status == "True") || applied
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := testbed.Find(st, "NodeDegraded"); d == nil || d.Status != "True" {
		t.Errorf("the hostile config was applied: %+v", st.ConfigVersion)
	}
	checkRefusal(t, ctx, hn, c, st, boot, from)
	if err := n.SetDesired(ctx, hn.base); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, hn.base); err != nil {
		t.Fatal(err)
	}
}

// checkRefusal checks the refused case's status, node and files.
func checkRefusal(t *testing.T, ctx context.Context, hn *hostileNode, c corpus.Case, st mcfgv1.MachineConfigNodeStatus, boot string, from int) {
	t.Helper()
	name, field := c.Config.Name, c.Field
	if uc := testbed.Find(st, "UpdateCompatible"); uc == nil || uc.Status != "False" ||
		!strings.Contains(uc.Message, `MachineConfig "`+name+`"`) || !strings.Contains(uc.Message, field+": ") {
		t.Errorf("UpdateCompatible = %+v, want False naming MachineConfig %q and %s", uc, name, field)
	}
	node := getNode(t, hn.n.Name)
	if s := node.Annotations["machineconfiguration.openshift.io/state"]; s != c.State {
		t.Errorf("state annotation %q, want %q", s, c.State)
	}
	if node.Spec.Unschedulable || node.Annotations["machineconfiguration.openshift.io/cordonedBy"] != "" {
		t.Error("node cordoned")
	}
	for _, tr := range hn.log.Transitions(from) {
		if tr == "Cordoned=True" || tr == "Drained=True" || tr == "AppliedFilesAndOS=True" {
			t.Errorf("transition %s during a refused update", tr)
		}
	}
	if now, err := hn.n.Sys.BootID(ctx); err != nil || now != boot {
		t.Errorf("boot ID %q (%v), want %q: the node rebooted", now, err, boot)
	}
	if _, err := os.Lstat(filepath.Join(hn.n.Sys.Root, c.Canary())); !os.IsNotExist(err) {
		t.Errorf("canary %s written (%v)", c.Canary(), err)
	}
	if c.OS != "" {
		for _, call := range callsLike(t, hn.n, "rebase", "switch", "--append", "--delete", "install", "override") {
			t.Errorf("OS tool called for a refused config: %s", call)
		}
	}
}
