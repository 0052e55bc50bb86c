package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// With --drain-timeout-action fail, a drain blocked by a budget past its
// timeout fails the update: the node is uncordoned, nothing is written (no
// reboot), NodeDegraded and a Warning Event name the budget and the pods,
// and the retry cordons again. Once the budget is lifted the update
// completes.
func TestDrainTimeoutFails(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name, file = "u7f", "/etc/nodeconfd-drain.conf"
	config(t, "rendered-u7f-a", ign(nil))
	config(t, "rendered-u7f-b", ign(map[string]string{file: "b\n"}))
	n, log := nodeOpts(t, name, "rendered-u7f-a", testbed.NodeOptions{
		ExtraArgs: []string{"--drain-timeout", "4s", "--drain-timeout-action", "fail", cordonFirst}})
	podsOn(t, name, 2)
	budgetOn(t, "web-"+name)
	cordons := watchCordon(ctx, t, name)
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-u7f-b"); err != nil {
		t.Fatal(err)
	}
	st, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "NodeDegraded")
		return c != nil && c.Status == "True" && strings.Contains(c.Message, "drain timed out")
	})
	if err != nil {
		t.Fatal(err)
	}
	degraded := testbed.Find(st, "NodeDegraded").Message
	t.Logf("NodeDegraded: %s", degraded)
	for _, want := range []string{"Error: draining node u7f: drain timed out after 4s", "Evicted 0/2 pods",
		"pods default/web-u7f-a, default/web-u7f-b: PodDisruptionBudget web-u7f allows 0 disruptions",
		"uncordoned the node, nothing was written"} {
		if !strings.Contains(degraded, want) {
			t.Errorf("NodeDegraded message lacks %q", want)
		}
	}
	if c := testbed.Find(st, "Drained"); c.Status != "Unknown" || c.Message != degraded {
		t.Errorf("Drained = %s %q, want Unknown with the error", c.Status, c.Message)
	}
	if c := testbed.Find(st, "Cordoned"); c.Status != "False" || !strings.Contains(c.Message, "Uncordoned after the drain timed out") {
		t.Errorf("Cordoned = %s %q", c.Status, c.Message)
	}
	wantEventMessage(t, name, "Node", "UpdateFailed", "PodDisruptionBudget web-u7f allows 0 disruptions")
	// The node was uncordoned after the failure, and the retry cordons
	// (and fails) again: the cordon went on, off, on.
	if err := cordons.waitFor(ctx, "on", "off", "on"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(n.Sys.Root, file)); !os.IsNotExist(err) {
		t.Errorf("%s written by an update whose drain failed: %v", file, err)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d after a failed drain, want 1", b)
	}

	if err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "web-"+name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u7f-b"); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, n, file); got != "b\n" {
		t.Errorf("%s = %q", file, got)
	}
	if node := getNode(t, name); node.Spec.Unschedulable || node.Annotations[names.CordonedBy] != "" {
		t.Errorf("after the update: unschedulable=%v, annotations %v", node.Spec.Unschedulable, node.Annotations)
	}
	if left := podsLeft(t, name); left != 0 {
		t.Errorf("%d pods left", left)
	}
}

// With the default policy a drain blocked past its timeout keeps retrying:
// the Drained message says what blocks it, a Warning Event too. A SIGTERM
// stops it after the shutdown grace period, and the update goes on once the
// budget is lifted.
func TestDrainBlockedKeepsRetrying(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "u7r"
	config(t, "rendered-u7r-a", ign(nil))
	config(t, "rendered-u7r-b", ign(map[string]string{"/etc/nodeconfd-drain.conf": "b\n"}))
	n, log := nodeOpts(t, name, "rendered-u7r-a", testbed.NodeOptions{ExtraArgs: []string{"--drain-timeout", "4s", cordonFirst}})
	podsOn(t, name, 1)
	budgetOn(t, "web-"+name)
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-u7r-b"); err != nil {
		t.Fatal(err)
	}
	st, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "Drained")
		return c != nil && strings.Contains(c.Message, "past the 4s drain timeout")
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := testbed.Find(st, "Drained").Message
	t.Logf("Drained: %s", msg)
	if !strings.Contains(msg, "Evicted 0/1 pods; waiting on pod default/web-u7r-a: PodDisruptionBudget web-u7r allows 0 disruptions") {
		t.Errorf("Drained message %q does not say what blocks the drain", msg)
	}
	if c := testbed.Find(st, "Drained"); c.Status != "Unknown" {
		t.Errorf("Drained = %s", c.Status)
	}
	wantEventMessage(t, name, "Node", "DrainBlocked", "PodDisruptionBudget web-u7r allows 0 disruptions")
	if !getNode(t, name).Spec.Unschedulable {
		t.Error("node uncordoned while its drain is still retrying")
	}
	// SIGTERM: the blocked drain gives up after the shutdown grace period,
	// the daemon exits cleanly, and the next daemon drains again.
	start := time.Now()
	if err := n.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("SIGTERM during a blocked drain took %s to stop the daemon", took)
	}
	if !strings.Contains(n.DaemonLog(), "Stopped") {
		t.Error("the daemon did not exit cleanly")
	}
	data, err := os.ReadFile(filepath.Join(n.Sys.Root, "/var/lib/nodeconfd", progress.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := progress.Unmarshal(data); err != nil || !rec.Done("cordon") || rec.Done("drain") {
		t.Errorf("record after SIGTERM during the drain: %+v %v; want cordon done, drain not", rec, err)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "web-"+name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u7r-b"); err != nil {
		t.Fatal(err)
	}
	if c := log.Condition("Drained"); c.Status != "True" || c.Message != "Drained node: evicted 1 pod, left 1 pod of DaemonSets or static pods in place" {
		t.Errorf("Drained = %s %q", c.Status, c.Message)
	}
	if getNode(t, name).Spec.Unschedulable {
		t.Error("node left cordoned")
	}
}

// A node an administrator cordoned stays cordoned after an update, and the
// status says so.
func TestAdminCordonKept(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "u7c"
	config(t, "rendered-u7c-a", ign(nil))
	config(t, "rendered-u7c-b", ign(map[string]string{"/etc/nodeconfd-drain.conf": "b\n"}))
	n, log := node(t, name, "rendered-u7c-a")
	podsOn(t, name, 2)
	if _, err := bed.Kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`),
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-u7c-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u7c-b"); err != nil {
		t.Fatal(err)
	}
	node := getNode(t, name)
	if !node.Spec.Unschedulable || node.Annotations[names.CordonedBy] != "" {
		t.Errorf("after the update: unschedulable=%v, annotations %v; want the admin's cordon kept", node.Spec.Unschedulable,
			node.Annotations)
	}
	if c := log.Condition("Cordoned"); c.Status != "True" || c.Message != "Node was already cordoned; it stays cordoned after the update" {
		t.Errorf("Cordoned = %s %q", c.Status, c.Message)
	}
	if c := log.Condition("Uncordoned"); c.Status != "False" || c.Reason != "NotRequired" ||
		c.Message != "Node was cordoned before the update; left cordoned" {
		t.Errorf("Uncordoned = %s %s %q", c.Status, c.Reason, c.Message)
	}
	if left := podsLeft(t, name); left != 0 {
		t.Errorf("%d pods left", left)
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2", b)
	}
}

// cordonFirst is the daemon's flag for a drain that a budget at zero holds
// after the cordon: without it the update waits before the cordon
// (TestDrainForecastWaits).
const cordonFirst = "--drain-forecast-wait=false"

// budgetOn creates a PodDisruptionBudget with maxUnavailable 0 over
// app=<app> in default, and waits until its status allows no disruption.
func budgetOn(t *testing.T, app string) {
	t.Helper()
	ctx := context.Background()
	zero := intstr.FromInt32(0)
	if _, err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		pdb, err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Get(ctx, app, metav1.GetOptions{})
		return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods > 0 &&
			pdb.Status.DisruptionsAllowed == 0, err
	})
	if err != nil {
		t.Fatalf("waiting for budget %s: %v", app, err)
	}
}

// wantEventMessage checks the object has an event with this reason whose
// message holds want.
func wantEventMessage(t *testing.T, name, kind, reason, want string) {
	t.Helper()
	var msgs []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 15*time.Second, true,
		func(ctx context.Context) (bool, error) {
			evs, err := bed.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
				"involvedObject.name": name, "involvedObject.kind": kind, "reason": reason}.String()})
			if err != nil {
				return false, err
			}
			msgs = nil
			for _, e := range evs.Items {
				msgs = append(msgs, e.Message)
				if strings.Contains(e.Message, want) && e.Type == corev1.EventTypeWarning {
					return true, nil
				}
			}
			return false, nil
		})
	if err != nil {
		t.Errorf("%s %s: no Warning event %s with %q (have %q)", kind, name, reason, want, msgs)
	}
}

// cordonStates records the cordon state of a node ("on", "off") each time it
// changes, as a watch sees it.
type cordonStates struct {
	mu      sync.Mutex
	states  []string
	changed chan struct{}
}

func watchCordon(ctx context.Context, t *testing.T, name string) *cordonStates {
	t.Helper()
	w, err := bed.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	l := &cordonStates{changed: make(chan struct{}, 1)}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			node, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			s := "off"
			if node.Spec.Unschedulable {
				s = "on"
			}
			l.mu.Lock()
			if len(l.states) == 0 || l.states[len(l.states)-1] != s {
				l.states = append(l.states, s)
			}
			l.mu.Unlock()
			select {
			case l.changed <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

// waitFor waits until the recorded states (after the first, the state at
// the start) hold want in order.
func (l *cordonStates) waitFor(ctx context.Context, want ...string) error {
	for {
		l.mu.Lock()
		got := strings.Join(l.states, ",")
		l.mu.Unlock()
		if strings.Contains(got, strings.Join(want, ",")) {
			return nil
		}
		select {
		case <-ctx.Done():
			return &cordonError{got: got, want: strings.Join(want, ",")}
		case <-l.changed:
		}
	}
}

type cordonError struct{ got, want string }

func (e *cordonError) Error() string {
	return "cordon states " + e.got + ", want them to hold " + e.want
}

// An administrator rolls back (sets desiredConfig to the node's current
// config) while the drain is blocked: the drain stops within seconds, the
// stopped update lifts its cordon, nothing is written and nothing rebooted, and the node reports Updated at
// its config again.
func TestRollbackStopsBlockedDrain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "u7b"
	n, log := blockedDrain(ctx, t, name, "/etc/nodeconfd-rollback.conf")
	if !getNode(t, name).Spec.Unschedulable {
		t.Fatal("node not cordoned while its drain is blocked")
	}
	rollback := log.Len()
	start := time.Now()
	if err := n.SetDesired(ctx, "rendered-u7b-a"); err != nil {
		t.Fatal(err)
	}
	st, err := log.WaitStatus(ctx, rollback, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "Updated")
		return c != nil && c.Status == "True" && st.ConfigVersion != nil && st.ConfigVersion.Desired == "rendered-u7b-a"
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rolled back in %s", time.Since(start).Round(100*time.Millisecond))
	// The stopped update lifted its cordon and said so; the rollback's own
	// update then needed none.
	var said bool
	for _, c := range log.History("Cordoned") {
		said = said || c.Status == "False" && strings.Contains(c.Message, "desired config changed")
	}
	if !said {
		t.Errorf("Cordoned never said the node was uncordoned for the new desired config: %+v", log.History("Cordoned"))
	}
	if c := testbed.Find(st, "Uncordoned"); c == nil || c.Reason != "NotRequired" {
		t.Errorf("Uncordoned = %+v after the rollback", c)
	}
	if c := testbed.Find(st, "NodeDegraded"); c != nil && c.Status == "True" {
		t.Errorf("NodeDegraded after the rollback: %s", c.Message)
	}
	if st.ConfigVersion.Current != "rendered-u7b-a" {
		t.Errorf("current config %q", st.ConfigVersion.Current)
	}
	if getNode(t, name).Spec.Unschedulable {
		t.Error("node left cordoned after the rollback")
	}
	if _, err := os.Stat(filepath.Join(n.Sys.Root, "/etc/nodeconfd-rollback.conf")); !os.IsNotExist(err) {
		t.Errorf("the rolled-back config's file: %v", err)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
	if left := podsLeft(t, name); left != 1 {
		t.Errorf("%d pods left on the node, want the 1 the budget protects", left)
	}
	if !strings.Contains(n.DaemonLog(), "Update stopped: the node's desired config changed") {
		t.Error("the daemon log does not say why the update stopped")
	}
	t.Logf("transitions after the rollback: %v", log.Transitions(rollback))
	// Settled again on its config, the daemon gives back memory again.
	released := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if released = strings.Count(n.DaemonLog(), "Settled; released memory"); released == 2 {
			break
		}
	}
	if released != 2 {
		t.Errorf("memory released %d times, want 2 (at start and after the rollback)", released)
	}
}

// A newer config that needs no drain (a CRI-O reload) replaces an update
// whose drain is blocked: the stopped update lifts its cordon, and the new
// config is applied without a drain or a reboot.
func TestNewConfigStopsBlockedDrain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "u7n"
	config(t, "rendered-u7n-c", ign(map[string]string{"/etc/containers/registries.d/u7n.yaml": "docker: {}\n"}))
	n, log := blockedDrain(ctx, t, name, "/etc/nodeconfd-superseded.conf")
	if err := n.SetDesired(ctx, "rendered-u7n-c"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u7n-c"); err != nil {
		t.Fatal(err)
	}
	wantCRIOConfigOnly(t, n, log, "/etc/containers/registries.d/u7n.yaml")
	wantGivenBack(ctx, t, n, log, "desired config changed")
}

// The same, with the daemon down while the desired config changes (a
// SIGTERM during the blocked drain, e.g. a DaemonSet rollout): the next
// daemon finds the replaced update and lifts its cordon before it applies
// the new config.
func TestNewConfigWhileDaemonDown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "u7d"
	config(t, "rendered-u7d-c", ign(map[string]string{"/etc/containers/registries.d/u7d.yaml": "docker: {}\n"}))
	n, log := blockedDrain(ctx, t, name, "/etc/nodeconfd-superseded.conf")
	if err := n.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	if !getNode(t, name).Spec.Unschedulable {
		t.Fatal("the stopped daemon's cordon is not on the node")
	}
	if err := n.SetDesired(ctx, "rendered-u7d-c"); err != nil {
		t.Fatal(err)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u7d-c"); err != nil {
		t.Fatal(err)
	}
	wantCRIOConfigOnly(t, n, log, "/etc/containers/registries.d/u7d.yaml")
	wantGivenBack(ctx, t, n, log, "was replaced by a new desired config")
	if !strings.Contains(n.DaemonLog(), "Replaced update gave back its cordon") {
		t.Error("the daemon log does not say it gave back the replaced update's cordon")
	}
}

// wantCRIOConfigOnly checks that the node runs the new config (file, a
// CRI-O reload) and nothing of the one it replaced, whose drain was blocked
// (blockedDrain): no reboot, no drain, the protected pod still there, the
// node uncordoned.
func wantCRIOConfigOnly(t *testing.T, n *testbed.Node, log *testbed.StatusLog, file string) {
	t.Helper()
	if getNode(t, n.Name).Spec.Unschedulable {
		t.Error("node left cordoned")
	}
	if got := readNodeFile(t, n, file); got != "docker: {}\n" {
		t.Errorf("the new config's file: %q", got)
	}
	if _, err := os.Stat(filepath.Join(n.Sys.Root, "/etc/nodeconfd-superseded.conf")); !os.IsNotExist(err) {
		t.Errorf("the superseded config's file: %v", err)
	}
	if c, _ := n.Sys.CRIOReloads(); c != 1 {
		t.Errorf("CRI-O reloads = %d, want 1", c)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
	if left := podsLeft(t, n.Name); left != 1 {
		t.Errorf("%d pods left on the node, want the 1 the budget protects", left)
	}
	if c := log.Condition("Drained"); c.Reason != "NotRequired" {
		t.Errorf("Drained = %s %s %q, want NotRequired for the new config", c.Status, c.Reason, c.Message)
	}
}

// wantGivenBack checks that the update a new desired config replaced lifted
// its own cordon (Cordoned went False saying why), so the new config's
// update, which needed no drain, found nothing to
// uncordon.
func wantGivenBack(ctx context.Context, t *testing.T, n *testbed.Node, log *testbed.StatusLog, why string) {
	t.Helper()
	var said bool
	for _, c := range log.History("Cordoned") {
		said = said || c.Status == "False" && strings.Contains(c.Message, why)
	}
	if !said {
		t.Errorf("Cordoned never said the node was uncordoned because %s: %+v", why, log.History("Cordoned"))
	}
	if c := log.Condition("Uncordoned"); c == nil || c.Reason != "NotRequired" {
		t.Errorf("Uncordoned = %+v, want NotRequired: the replaced update lifts its own cordon", c)
	}
}

// blockedDrain starts node name at config rendered-<name>-a with a pod a
// PodDisruptionBudget protects, sets its desired config to
// rendered-<name>-b (which writes file, so it reboots and drains), and
// returns once the Drained condition says the budget blocks the drain.
func blockedDrain(ctx context.Context, t *testing.T, name, file string) (*testbed.Node, *testbed.StatusLog) {
	t.Helper()
	config(t, "rendered-"+name+"-a", ign(nil))
	config(t, "rendered-"+name+"-b", ign(map[string]string{file: "b\n"}))
	n, log := nodeOpts(t, name, "rendered-"+name+"-a", testbed.NodeOptions{ExtraArgs: []string{cordonFirst}})
	podsOn(t, name, 1)
	budgetOn(t, "web-"+name)
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-"+name+"-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "Drained")
		return c != nil && strings.Contains(c.Message, "PodDisruptionBudget web-"+name+" allows 0 disruptions")
	}); err != nil {
		t.Fatal(err)
	}
	return n, log
}
