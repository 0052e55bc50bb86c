package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// faultDir holds every file of the fault-point configs, so that a stray
// file of an earlier config shows.
const faultDir = "/etc/nodeconfd-faults"

// faultNode is a node that runs fault-point rounds one after the other.
type faultNode struct {
	*testbed.Node
}

// newFaultNode starts a node at an empty config. The rounds' nodes reboot
// side by side: the daemon waits for no other node.
func newFaultNode(t *testing.T, name string) *faultNode {
	base := "rendered-" + name + "-0"
	config(t, base, ign(nil))
	n, _ := node(t, name, base)
	return &faultNode{Node: n}
}

// faultConfig is a rendered config of a round and the files it holds.
type faultConfig struct {
	name  string
	files []string // sorted node paths
	data  map[string]string
	unit  string // unit file path and contents, "" for none
	unitC string
}

// config creates the round's config: files files under faultDir, whose
// contents name the config.
func (n *faultNode) config(t *testing.T, suffix string, files int) faultConfig {
	t.Helper()
	c := faultConfig{name: "rendered-" + n.Name + "-" + suffix, data: map[string]string{}}
	for i := range files {
		p := fmt.Sprintf("%s/%s-f%03d.conf", faultDir, suffix, i)
		c.data[p] = strings.Repeat(c.name+"\n", 1+i%50)
		c.files = append(c.files, p)
	}
	slices.Sort(c.files)
	config(t, c.name, ign(c.data))
	return c
}

// configWithUnit is config with a systemd unit too.
func (n *faultNode) configWithUnit(t *testing.T, suffix string, files int) faultConfig {
	t.Helper()
	c := faultConfig{name: "rendered-" + n.Name + "-" + suffix, data: map[string]string{}}
	for i := range files {
		p := fmt.Sprintf("%s/%s-f%03d.conf", faultDir, suffix, i)
		c.data[p] = c.name + "\n"
		c.files = append(c.files, p)
	}
	slices.Sort(c.files)
	c.unit = "/etc/systemd/system/nodeconfd-fault.service"
	c.unitC = "[Service]\nType=oneshot\nExecStart=/bin/true\n# " + c.name + "\n"
	unit := fmt.Sprintf(`"systemd":{"units":[{"name":"nodeconfd-fault.service","contents":%s}]}`, jsonString(c.unitC))
	config(t, c.name, ign(c.data, unit))
	return c
}

// converged waits until the node's API objects say it runs cfg, then
// checks its files.
func (n *faultNode) converged(ctx context.Context, cfg faultConfig) error {
	var why string
	for {
		why = n.statusProblem(ctx, cfg.name)
		if why == "" {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("never converged to %s: %s", cfg.name, why)
		case <-time.After(250 * time.Millisecond):
		}
	}
	return n.filesProblem(cfg)
}

// statusProblem says why the node does not show it runs config, "" when it does.
func (n *faultNode) statusProblem(ctx context.Context, config string) string {
	node, err := bed.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	a := node.Annotations
	switch {
	case a["machineconfiguration.openshift.io/currentConfig"] != config:
		return "currentConfig is " + a["machineconfiguration.openshift.io/currentConfig"]
	case a["machineconfiguration.openshift.io/state"] != "Done":
		return "state is " + a["machineconfiguration.openshift.io/state"] + ": " + a["machineconfiguration.openshift.io/reason"]
	case node.Spec.Unschedulable:
		return "node is cordoned"
	}
	mcn, err := bed.MCfg.MachineconfigurationV1().MachineConfigNodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	st := mcn.Status
	if c := testbed.Find(st, "Updated"); c == nil || c.Status != metav1.ConditionTrue {
		return "Updated is not True"
	}
	if c := testbed.Find(st, "NodeDegraded"); c == nil || c.Status != metav1.ConditionFalse {
		msg := ""
		if c != nil {
			msg = c.Message
		}
		return "NodeDegraded is not False: " + msg
	}
	if st.ConfigVersion == nil || st.ConfigVersion.Current != config {
		return "status.configVersion.current is not " + config
	}
	// A converged node shows no phase still under way.
	for _, c := range st.Conditions {
		if c.Status == metav1.ConditionUnknown {
			return c.Type + " is Unknown: " + c.Message
		}
	}
	return ""
}

// filesProblem compares the node's managed files with cfg's: the same
// paths under faultDir with the same contents, the unit when cfg has one,
// no temporary file and no open journal.
func (n *faultNode) filesProblem(cfg faultConfig) error {
	var errs []error
	got, err := n.tree(faultDir)
	if err != nil {
		return err
	}
	var stray, missing []string
	for _, p := range got {
		if _, ok := cfg.data[p]; !ok {
			stray = append(stray, p)
		}
	}
	for _, p := range cfg.files {
		data, err := os.ReadFile(filepath.Join(n.Sys.Root, p))
		switch {
		case err != nil:
			missing = append(missing, p)
		case string(data) != cfg.data[p]:
			errs = append(errs, fmt.Errorf("%s: wrong contents (%d bytes, want %d)", p, len(data), len(cfg.data[p])))
		}
	}
	if len(stray) > 0 {
		errs = append(errs, fmt.Errorf("%d stray files (e.g. %s)", len(stray), stray[0]))
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%d files missing (e.g. %s)", len(missing), missing[0]))
	}
	unit := "/etc/systemd/system/nodeconfd-fault.service"
	data, err := os.ReadFile(filepath.Join(n.Sys.Root, unit))
	switch {
	case cfg.unit != "" && string(data) != cfg.unitC:
		errs = append(errs, fmt.Errorf("%s: missing or wrong (%v)", unit, err))
	case cfg.unit == "" && err == nil:
		errs = append(errs, fmt.Errorf("%s: stray unit file", unit))
	}
	for _, dir := range []string{"/etc", "/var/lib/nodeconfd"} {
		if tmp, err := n.find(dir, func(name string) bool { return strings.HasSuffix(name, ".nodeconfd-tmp") }); err != nil || len(tmp) > 0 {
			errs = append(errs, fmt.Errorf("temporary files %v (%v)", tmp, err))
		}
	}
	if txns, _ := os.ReadDir(filepath.Join(n.Sys.Root, "/var/lib/nodeconfd/txn")); len(txns) > 0 {
		errs = append(errs, fmt.Errorf("%d open journals left (%s)", len(txns), txns[0].Name()))
	}
	return errors.Join(errs...)
}

// tree lists the node paths of the files under dir.
func (n *faultNode) tree(dir string) ([]string, error) {
	return n.find(dir, func(string) bool { return true })
}

// find lists the node paths of the non-directories under dir whose name matches.
func (n *faultNode) find(dir string, match func(name string) bool) ([]string, error) {
	var out []string
	root := filepath.Join(n.Sys.Root, dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !d.IsDir() && match(d.Name()) {
			rel, _ := filepath.Rel(n.Sys.Root, p)
			out = append(out, "/"+rel)
		}
		return nil
	})
	return out, err
}

// measure starts timing a round; the returned func fills in its time,
// reboots and retries.
func (n *faultNode) measure(res *roundResult) func() {
	start, boots := time.Now(), n.Sys.Boots()
	retries := strings.Count(n.DaemonLog(), "Update failed; will retry")
	return func() {
		res.took = time.Since(start)
		res.reboots = n.Sys.Boots() - boots
		res.retries = strings.Count(n.DaemonLog(), "Update failed; will retry") - retries
	}
}

// repair removes what a failed round left under faultDir and the journals
// it left open, so that the next rounds on the node are judged on their own.
func (n *faultNode) repair(t *testing.T) {
	for _, p := range []string{faultDir, "/var/lib/nodeconfd/txn"} {
		if err := os.RemoveAll(filepath.Join(n.Sys.Root, p)); err != nil {
			t.Logf("repairing node %s: %v", n.Name, err)
		}
	}
	_ = n.ResumeDaemon() // a round that failed before its restart
}

// waitStep waits until the node's progress record for config lists step
// as done.
func (n *faultNode) waitStep(ctx context.Context, config, step string) error {
	path := filepath.Join(n.Sys.Root, "/var/lib/nodeconfd", progress.FileName)
	for {
		if data, err := os.ReadFile(path); err == nil {
			if rec, err := progress.Unmarshal(data); err == nil && rec.Desired == config && rec.Done(step) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("step %s of %s never done: %w", step, config, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// evictablePods puts count pods of a ReplicaSet named after the round on
// the node, for its drain.
func evictablePods(t *testing.T, node, round string, count int) {
	t.Helper()
	ctx := context.Background()
	name := "fault-" + node + "-" + round
	labels := map[string]string{"app": name}
	rs, err := bed.Kube.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/web"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	for i := range count {
		_, err := bed.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name,
					UID: rs.UID, Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.com/web"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}
