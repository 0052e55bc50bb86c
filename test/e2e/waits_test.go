package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// A paused node stays on its config while another node takes the same
// update; its status says paused, by whom and since when, nothing is
// cordoned or written, and its drift is still reported; once the annotation
// is removed it updates.
func TestPausedNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const kept = "/etc/motd.d/pause-m"
	config(t, "rendered-pause-a", ign(nil))
	config(t, "rendered-pause-m", ign(map[string]string{kept: "m\n"}))
	config(t, "rendered-pause-b", ign(map[string]string{kept: "m\n", "/etc/motd.d/pause": "b\n"}))
	paused, plog := node(t, "pause-1", "rendered-pause-a")
	other, olog := node(t, "pause-2", "rendered-pause-a")
	if err := paused.SetDesired(ctx, "rendered-pause-m"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, plog, "rendered-pause-m"); err != nil {
		t.Fatal(err)
	}
	boots := paused.Sys.Boots()
	const why = "alice: db migration"
	if err := paused.Annotate(ctx, map[string]string{"nodeconfd.io/pause": why}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*testbed.Node{paused, other} {
		if err := n.SetDesired(ctx, "rendered-pause-b"); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitCurrent(ctx, olog, "rendered-pause-b"); err != nil {
		t.Fatal(err)
	}
	want := `Paused by annotation nodeconfd.io/pause="` + why + `" since `
	if err := waitMessage(ctx, plog, "UpdateExecuted", "Waiting", want); err != nil {
		t.Fatal(err)
	}
	// Drift is reported while paused.
	host := filepath.Join(paused.Sys.Root, kept)
	if err := os.WriteFile(host, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := plog.WaitFor(ctx, "NodeDegraded", "True", "ConfigDrift"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host, []byte("m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := plog.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
		t.Fatal(err)
	}
	if c := plog.Condition("UpdateExecuted"); c.Reason != "Waiting" || !strings.Contains(c.Message, want) {
		t.Errorf("paused node's UpdateExecuted = %s %s %q", c.Status, c.Reason, c.Message)
	}
	if cur := plog.Latest().ConfigVersion.Current; cur != "rendered-pause-m" {
		t.Errorf("paused node runs %s", cur)
	}
	if getNode(t, "pause-1").Spec.Unschedulable {
		t.Error("paused node cordoned")
	}
	if b := paused.Sys.Boots(); b != boots {
		t.Errorf("paused node booted %d times, %d before the pause", b, boots)
	}
	wantEvents(t, "pause-1", "Node", "Paused")
	unpause(ctx, t, "pause-1")
	if err := waitCurrent(ctx, plog, "rendered-pause-b"); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, paused, "/etc/motd.d/pause"); got != "b\n" {
		t.Errorf("file = %q after the pause", got)
	}
	wantEvents(t, "pause-1", "Node", "WaitEnded")
}

// A node paused while its drain is blocked (a PodDisruptionBudget): the
// drain stops, the node is uncordoned, and it
// waits paused; unpaused, it updates.
func TestPausedDuringDrain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	config(t, "rendered-pausedrain-a", ign(nil))
	config(t, "rendered-pausedrain-b", ign(map[string]string{"/etc/motd.d/pausedrain": "b\n"}))
	n, log := nodeOpts(t, "pausedrain", "rendered-pausedrain-a", testbed.NodeOptions{ExtraArgs: []string{cordonFirst}})
	podsOn(t, "pausedrain", 2)
	budgetOn(t, "web-pausedrain")
	if err := n.SetDesired(ctx, "rendered-pausedrain-b"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "Drained", "Unknown", ""); err != nil {
		t.Fatal(err)
	}
	if err := n.Annotate(ctx, map[string]string{"nodeconfd.io/pause": "bob: hold on"}); err != nil {
		t.Fatal(err)
	}
	if err := waitMessage(ctx, log, "Cordoned", "Waiting", `Paused by annotation nodeconfd.io/pause="bob: hold on"`); err != nil {
		t.Fatal(err)
	}
	if getNode(t, "pausedrain").Spec.Unschedulable {
		t.Error("paused node left cordoned")
	}
	uncordoned := false
	for _, c := range log.History("Cordoned") {
		uncordoned = uncordoned || strings.Contains(c.Message, "Uncordoned: the node was paused")
	}
	if !uncordoned {
		t.Error("Cordoned never said the pause uncordoned the node")
	}
	if err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "web-pausedrain", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	unpause(ctx, t, "pausedrain")
	if err := waitCurrent(ctx, log, "rendered-pausedrain-b"); err != nil {
		t.Fatal(err)
	}
}

// A maintenance window in another time zone (Asia/Kathmandu, UTC+5:45),
// from the pool's ConfigMap, opens during the test: the reboot update
// waits, naming the window's start, and cordons only once it is open.
func TestMaintenanceWindowOpens(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	config(t, "rendered-win-a", ign(nil))
	config(t, "rendered-win-b", ign(map[string]string{"/etc/motd.d/win": "b\n"}))
	n, log := nodeOpts(t, "win-1", "rendered-win-a", testbed.NodeOptions{ExtraArgs: []string{
		"--maintenance-windows-configmap", "nodeconfd-windows-{pool}"}})
	zone, err := time.LoadLocation("Asia/Kathmandu")
	if err != nil {
		t.Fatal(err)
	}
	opens := time.Now().Add(40 * time.Second).Truncate(time.Second)
	local := opens.In(zone)
	win := fmt.Sprintf("%s %s-%s Asia/Kathmandu", local.Weekday().String()[:3], local.Format("15:04:05"),
		local.Add(30*time.Minute).Format("15:04:05"))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nodeconfd-windows-worker", Namespace: testbed.Namespace},
		Data: map[string]string{"windows": win}}
	if _, err := bed.Kube.CoreV1().ConfigMaps(testbed.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bed.Kube.CoreV1().ConfigMaps(testbed.Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
	})
	cordons := watchCordons(ctx, t, []string{"win-1"})
	if err := n.SetDesired(ctx, "rendered-win-b"); err != nil {
		t.Fatal(err)
	}
	want := "the next opens at " + opens.UTC().Format(time.RFC3339)
	if err := waitMessage(ctx, log, "Cordoned", "Waiting", want); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-win-b"); err != nil {
		t.Fatal(err)
	}
	first := cordons.firstCordon("win-1", time.Time{})
	if first.Before(opens) {
		t.Errorf("cordoned at %s, before the window opened at %s", first, opens)
	}
	t.Logf("window %q opened at %s; cordoned %s later", win, opens.UTC(), first.Sub(opens).Round(100*time.Millisecond))
	wantEvents(t, "win-1", "Node", "OutsideMaintenanceWindow", "WaitEnded")
}

// A pod matching --blocking-pod-selector holds a reboot update, its name in
// the status, with nothing cordoned, until it is deleted.
func TestBlockingPod(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	config(t, "rendered-block-a", ign(nil))
	config(t, "rendered-block-b", ign(map[string]string{"/etc/motd.d/block": "b\n"}))
	n, log := nodeOpts(t, "block-1", "rendered-block-a", testbed.NodeOptions{ExtraArgs: []string{
		"--blocking-pod-selector", "app=backup,run=block-1"}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "backup-block-1", Namespace: "default",
		Labels: map[string]string{"app": "backup", "run": "block-1"}},
		Spec: corev1.PodSpec{NodeName: "block-1", Containers: []corev1.Container{{Name: "c", Image: "example.com/backup"}}}}
	if _, err := bed.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-block-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitMessage(ctx, log, "Cordoned", "Waiting", "Blocked by 1 pod matching app=backup,run=block-1 on the node: default/backup-block-1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	if getNode(t, "block-1").Spec.Unschedulable || log.Latest().ConfigVersion.Current != "rendered-block-a" {
		t.Error("blocked node cordoned or updated")
	}
	deleted := time.Now()
	zero := int64(0)
	if err := bed.Kube.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-block-b"); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s after the blocking pod's deletion", time.Since(deleted).Round(time.Second))
	wantEvents(t, "block-1", "Node", "BlockingPods", "WaitEnded")
}

// waitMessage waits until condition t has reason and a message containing want.
func waitMessage(ctx context.Context, log *testbed.StatusLog, t, reason, want string) error {
	for {
		if c := log.Condition(t); c != nil && c.Reason == reason && strings.Contains(c.Message, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s %s %q: %w; latest:\n%s", t, reason, want, ctx.Err(), log.Describe())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// unpause removes the pause annotation.
func unpause(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"nodeconfd.io/pause": nil}}})
	if _, err := bed.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// uncordonLog remembers when a node was last seen going from cordoned to
// schedulable.
type uncordonLog struct {
	mu   sync.Mutex
	was  bool
	last time.Time
}

func (u *uncordonLog) uncordonedAt() time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last
}

func watchUncordons(ctx context.Context, t *testing.T, name string) *uncordonLog {
	t.Helper()
	w, err := bed.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	u := &uncordonLog{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			u.mu.Lock()
			if u.was && !n.Spec.Unschedulable {
				u.last = time.Now()
			}
			u.was = n.Spec.Unschedulable
			u.mu.Unlock()
		}
	}()
	return u
}
