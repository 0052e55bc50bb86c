package drain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
)

// A node with 50 Deployment pods, a StatefulSet, a DaemonSet pod, an
// unowned pod and an emptyDir pod: without --evict-unowned-pods the drain
// refuses, naming the unowned pod, and evicts nothing; with it, every pod
// but the DaemonSet's goes, and the node is uncordoned at the end.
func TestDrainMixedWorkload(t *testing.T) {
	const name = "mixed"
	d := node(t, name)
	for i, app := range []string{"web", "api"} {
		rs := replicaSet(t, name, app)
		for j := 0; j < 25; j++ {
			createPod(t, name, fmt.Sprintf("%s-%d", app, j), rs)
		}
		if i == 0 {
			createPod(t, name, "cache", rs, withEmptyDir)
		}
	}
	ss := statefulSet(t, name, "db")
	for j := 0; j < 3; j++ {
		createPod(t, name, fmt.Sprintf("db-%d", j), ss)
	}
	agent := createPod(t, name, "agent", daemonSet(t, name, "agent"))
	createPod(t, name, "bare", owner{})
	waitRunning(t, name, 56)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The update's check before the cordon names the pod.
	var ue *drain.UnownedError
	if err := d.CheckDrain(ctx); !errors.As(err, &ue) || strings.Join(ue.Pods, ",") != name+"/bare" ||
		!errors.Is(err, phases.ErrCannotDrain) {
		t.Fatalf("CheckDrain without --evict-unowned-pods: %v, want an error naming %s/bare", err, name)
	}
	cordoned, err := d.Cordon(ctx)
	if err != nil || !cordoned {
		t.Fatalf("Cordon: %v %v", cordoned, err)
	}
	_, err = d.Drain(ctx, newProgressLog())
	if !errors.As(err, &ue) || strings.Join(ue.Pods, ",") != name+"/bare" || !errors.Is(err, phases.ErrCannotDrain) {
		t.Fatalf("drain without --evict-unowned-pods: %v, want an error naming %s/bare", err, name)
	}
	if n := len(podsOn(t, name)); n != 56 {
		t.Errorf("%d pods left after the refused drain, want all 56", n)
	}

	d.EvictUnowned = true
	if err := d.CheckDrain(ctx); err != nil {
		t.Fatalf("CheckDrain with --evict-unowned-pods: %v", err)
	}
	res, err := d.Drain(ctx, newProgressLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("drain: %+v", res)
	if res.Evicted != 55 || res.Skipped != 1 {
		t.Errorf("evicted %d, skipped %d; want 55 and 1", res.Evicted, res.Skipped)
	}
	left := podsOn(t, name)
	if len(left) != 1 || left[0].UID != agent.UID || left[0].DeletionTimestamp != nil {
		t.Errorf("pods left: %s, want the DaemonSet pod agent, untouched", podNames(left))
	}
	if err := d.Uncordon(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Spec.Unschedulable || n.Annotations[names.CordonedBy] != "" {
		t.Errorf("after Uncordon: unschedulable=%v, annotations %v", n.Spec.Unschedulable, n.Annotations)
	}
}

// The cordon annotation: an administrator's cordon is never lifted, and a
// restarted daemon recognises its own cordon.
func TestCordonOwnership(t *testing.T) {
	const name = "cordons"
	d := node(t, name)
	ctx := context.Background()
	get := func() *corev1.Node {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Ours: cordon, a restart's cordon says it is ours, uncordon lifts it.
	for i := 0; i < 2; i++ {
		if byUs, err := d.Cordon(ctx); err != nil || !byUs {
			t.Fatalf("Cordon #%d: %v %v, want ours", i+1, byUs, err)
		}
	}
	if n := get(); !n.Spec.Unschedulable || n.Annotations[names.CordonedBy] != "nodeconfd" {
		t.Fatalf("after Cordon: unschedulable=%v annotations %v", n.Spec.Unschedulable, n.Annotations)
	}
	for i := 0; i < 2; i++ {
		if err := d.Uncordon(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := get(); n.Spec.Unschedulable || n.Annotations[names.CordonedBy] != "" {
		t.Fatalf("after Uncordon: unschedulable=%v annotations %v", n.Spec.Unschedulable, n.Annotations)
	}
	// The administrator's: kept through Cordon and Uncordon.
	if _, err := client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`),
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if byUs, err := d.Cordon(ctx); err != nil || byUs {
		t.Fatalf("Cordon of an admin-cordoned node: %v %v, want not ours", byUs, err)
	}
	if err := d.Uncordon(ctx); err != nil {
		t.Fatal(err)
	}
	if n := get(); !n.Spec.Unschedulable || n.Annotations[names.CordonedBy] != "" {
		t.Errorf("admin cordon after Cordon+Uncordon: unschedulable=%v annotations %v", n.Spec.Unschedulable, n.Annotations)
	}
}

// A PodDisruptionBudget with maxUnavailable 0 blocks one pod: the progress
// message names the budget and the pod, a timeout reports it blocked (once
// per period), and lifting the budget lets the drain finish.
func TestDrainBlockedByBudget(t *testing.T) {
	const name = "budget"
	d := node(t, name)
	d.Timeout = 4 * time.Second
	web := replicaSet(t, name, "web")
	free := replicaSet(t, name, "free")
	createPod(t, name, "web-0", web)
	for j := 0; j < 3; j++ {
		createPod(t, name, fmt.Sprintf("free-%d", j), free)
	}
	waitRunning(t, name, 4)
	budget(t, name, "web", 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	log := newProgressLog()
	type result struct {
		res phases.DrainResult
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		res, err := d.Drain(ctx, log)
		done <- result{res, err}
	}()
	msg, err := log.waitFor(ctx, "Evicted 3/4 pods", "pod budget/web-0: PodDisruptionBudget web allows 0 disruptions")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress: %s", msg)
	bctx, bcancel := context.WithTimeout(ctx, 10*time.Second)
	blocked, err := log.waitFor(bctx, "past the 4s drain timeout", "PodDisruptionBudget web")
	bcancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("blocked: %s", blocked)
	// Blocked comes once per timeout period: once by 7s (the second is due
	// at 8s). Progress comes when what blocks the drain changes, not at
	// every tick because the time it shows did.
	time.Sleep(time.Until(start.Add(7 * time.Second)))
	progress, b := log.messages()
	if len(b) != 1 {
		t.Errorf("%d Blocked reports within 7s (timeout 4s), want 1: %q", len(b), b)
	}
	for i := 1; i < len(progress); i++ {
		if withoutTimes(progress[i]) == withoutTimes(progress[i-1]) {
			t.Errorf("progress reported twice with only the times changed: %q, then %q", progress[i-1], progress[i])
		}
	}

	if err := client.PolicyV1().PodDisruptionBudgets(name).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.res.Evicted != 4 || r.res.Blocked < 4*time.Second || r.res.Blocked > r.res.Took {
		t.Errorf("result %+v: want 4 evicted, blocked at least 4s and at most the drain", r.res)
	}
	if left := podsOn(t, name); len(left) != 0 {
		t.Errorf("pods left: %s", podNames(left))
	}
}

// With the fail policy, a drain blocked past its timeout gives up with an
// error that names the budget and the pod.
func TestDrainFailsAtTimeout(t *testing.T) {
	const name = "budget-fail"
	d := node(t, name)
	d.Timeout, d.FailOnTimeout = 2*time.Second, true
	createPod(t, name, "web-0", replicaSet(t, name, "web"))
	createPod(t, name, "free-0", replicaSet(t, name, "free"))
	waitRunning(t, name, 2)
	budget(t, name, "web", 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := d.Drain(ctx, newProgressLog())
	if !errors.Is(err, phases.ErrDrainTimedOut) {
		t.Fatalf("Drain: %v, want a timeout", err)
	}
	took := time.Since(start)
	t.Logf("after %s: %v", took.Round(time.Millisecond), err)
	if !strings.Contains(err.Error(), "Evicted 1/2 pods") || !strings.Contains(err.Error(), "PodDisruptionBudget web allows 0 disruptions") ||
		!strings.Contains(err.Error(), "pod budget-fail/web-0") {
		t.Errorf("error %q does not say what blocked the drain", err)
	}
	if took > 4*time.Second {
		t.Errorf("gave up after %s, timeout 2s", took)
	}
}

// StatefulSet pods replaced by new pods of the same names during the drain
// do not stall it, and the new pods (they arrived after the cordon: they
// name the node) are left in place, not evicted in their predecessors'
// stead.
func TestDrainStatefulSetPodRecreated(t *testing.T) {
	const name = "sts"
	d := node(t, name)
	ss := statefulSet(t, name, "db")
	for j := 0; j < 3; j++ {
		createPod(t, name, fmt.Sprintf("db-%d", j), ss)
	}
	// hold keeps the drain running until the test lifts its budget.
	createPod(t, name, "hold", replicaSet(t, name, "hold"))
	waitRunning(t, name, 4)
	// The db pods' evictions are refused for now (a budget), then the pods
	// fail and the StatefulSet replaces them.
	budget(t, name, "db", 0, 0)
	budget(t, name, "hold", 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := client.CoreV1().Pods(name).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	log := newProgressLog()
	done := make(chan error, 1)
	go func() {
		_, err := d.Drain(ctx, log)
		done <- err
	}()
	if _, err := log.waitFor(ctx, "pods sts/db-0, sts/db-1, sts/db-2: PodDisruptionBudget db", "pod sts/hold: PodDisruptionBudget hold"); err != nil {
		t.Fatal(err)
	}
	old := map[string]types.UID{}
	for _, p := range podsOn(t, name) {
		if strings.HasPrefix(p.Name, "db-") {
			old[p.Name] = p.UID
		}
	}
	zero := int64(0)
	for n := range old {
		if err := client.CoreV1().Pods(name).Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	for deleted := 0; deleted < len(old); {
		ev := <-w.ResultChan()
		if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Deleted && old[p.Name] == p.UID {
			deleted++
		}
	}
	for n := range old {
		createPod(t, name, n, ss)
	}
	// The drain now waits on hold alone, with the new db pods left alone.
	if _, err := log.waitFor(ctx, "Evicted 3/4 pods; waiting on pod sts/hold:"); err != nil {
		t.Fatal(err)
	}
	if err := client.PolicyV1().PodDisruptionBudgets(name).Delete(ctx, "hold", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("drain stalled")
	}
	left := podsOn(t, name)
	if len(left) != 3 {
		t.Fatalf("pods left: %s, want the 3 new db pods", podNames(left))
	}
	for _, p := range left {
		if p.UID == old[p.Name] || p.DeletionTimestamp != nil {
			t.Errorf("pod %s: uid %s (old %s), deleting %v: want the new pod, untouched", p.Name, p.UID, old[p.Name],
				p.DeletionTimestamp != nil)
		}
	}
}

// withoutTimes is a progress message without its trailing times.
func withoutTimes(msg string) string {
	if i := strings.LastIndex(msg, " ("); i >= 0 {
		return msg[:i]
	}
	return msg
}

// At most Concurrency evictions are in flight at once, and that many are
// (the bound is reached, not only respected).
func TestDrainConcurrencyBound(t *testing.T) {
	const name = "bound"
	d := node(t, name)
	web := replicaSet(t, name, "web")
	for j := 0; j < 20; j++ {
		createPod(t, name, fmt.Sprintf("web-%d", j), web)
	}
	waitRunning(t, name, 20)
	ev := &evictions{API: d.Client, delay: 50 * time.Millisecond}
	d.Client, d.Concurrency = ev, 4
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := d.Drain(ctx, newProgressLog())
	if err != nil {
		t.Fatal(err)
	}
	if res.Evicted != 20 || ev.most() != 4 {
		t.Errorf("evicted %d, at most %d evictions in flight; want 20 and 4", res.Evicted, ev.most())
	}
}

// An eviction of a pod whose name a new pod took meanwhile fails the UID
// precondition on the API server (409 Conflict on the pod): the pod evicted
// is gone, and the new pod is left alone.
func TestDrainUIDPreconditionConflict(t *testing.T) {
	const name = "uid"
	d := node(t, name)
	ss := statefulSet(t, name, "db")
	old := createPod(t, name, "db-0", ss)
	// hold keeps the drain running until db-0's eviction has answered (the
	// watch may see db-0 go first).
	createPod(t, name, "hold", replicaSet(t, name, "hold"))
	waitRunning(t, name, 2)
	budget(t, name, "hold", 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var fresh *corev1.Pod
	var once sync.Once
	ev := &evictions{API: d.Client, before: func(e *policyv1.Eviction) {
		if e.Name == "db-0" {
			once.Do(func() { fresh = replace(ctx, t, old) })
		}
	}}
	d.Client = ev
	log := newProgressLog()
	done := make(chan error, 1)
	go func() {
		_, err := d.Drain(ctx, log)
		done <- err
	}()
	if _, err := log.waitFor(ctx, "Evicted 1/2 pods; waiting on pod uid/hold: PodDisruptionBudget hold"); err != nil {
		t.Fatal(err)
	}
	if err := client.PolicyV1().PodDisruptionBudgets(name).Delete(ctx, "hold", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	answers := ev.answersFor("db-0")
	var status apierrors.APIStatus
	if len(answers) != 1 || !apierrors.IsConflict(answers[0]) || !errors.As(answers[0], &status) ||
		status.Status().Details == nil || status.Status().Details.Name != "db-0" ||
		!strings.Contains(answers[0].Error(), "the UID in the precondition") {
		t.Fatalf("eviction answers %v, want one Conflict on the pod (the UID precondition)", answers)
	}
	t.Logf("API server's answer: %v", answers[0])
	left := podsOn(t, name)
	if len(left) != 1 || left[0].UID != fresh.UID || left[0].UID == old.UID || left[0].DeletionTimestamp != nil {
		t.Errorf("pods left: %v, want the new db-0 (%s), untouched", left, fresh.UID)
	}
}

// replace deletes the pod and creates a new one of the same name, as its
// StatefulSet would.
func replace(ctx context.Context, t *testing.T, old *corev1.Pod) *corev1.Pod {
	zero := int64(0)
	pods := client.CoreV1().Pods(old.Namespace)
	if err := pods.Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Error(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, old.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("old %s not gone: %v", old.Name, err)
	}
	p := old.DeepCopy()
	p.ObjectMeta = metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, OwnerReferences: p.OwnerReferences}
	p.Status = corev1.PodStatus{}
	fresh, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("recreating %s: %v", old.Name, err)
		return &corev1.Pod{}
	}
	return fresh
}
