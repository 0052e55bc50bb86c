package drain

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
	"github.com/nodeconfd/nodeconfd/cluster/surge"
	"github.com/nodeconfd/nodeconfd/daemon/drain"
)

// surgeEvents records what a drainer's surges tell (Events and metric).
type surgeEvents struct {
	mu     sync.Mutex
	events []string
	counts map[string]int
}

// watchSurges turns surges on for d, with slot Leases in ns, and runs the controller's half
// (surge.Granter) over them until the test ends.
func watchSurges(t *testing.T, d *drain.Drainer, ns string) *surgeEvents {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	g := &surge.Granter{Client: kubetest.API(client, nil), Namespace: ns, Log: zaptest.NewLogger(t).Named("granter")}
	go func() {
		defer close(done)
		if err := g.Run(ctx, nil); err != nil && ctx.Err() == nil {
			t.Errorf("granter: %v", err)
		}
	}()
	s := &surgeEvents{counts: map[string]int{}}
	d.Surge = drain.SurgeOptions{Max: 1, Namespace: ns,
		Event: func(ref corev1.ObjectReference, warning bool, reason, msg string) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.events = append(s.events, ref.Kind+" "+ref.Name+" "+reason+": "+msg)
		},
		Count: func(result string) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.counts[result]++
		}}
	return s
}

// A one-replica Deployment that opted in, under a budget of minAvailable 1: the drain raises
// its replicas to 2 (recorded in a slot Lease first), evicts the old pod once the new one runs
// on another node, and puts the replicas back to 1; the slot is freed, and the result, an
// Event on the Deployment and the metric tell of the surge.
func TestSurgeKeepsTheBudget(t *testing.T) {
	const name = "surge"
	d := node(t, name)
	node(t, name+"-elsewhere")
	surges := watchSurges(t, d, name)
	rs := replicaSet(t, name, "solo")
	optIn(t, name, "solo")
	createPod(t, name, "solo-a", rs)
	waitRunning(t, name, 1)
	minBudget(t, name, "solo", 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The ReplicaSet controller's part: a new pod, on the other node, once replicas are 2.
	go func() {
		if waitReplicas(ctx, name, "solo", 2) == nil {
			createPodOn(t, name+"-elsewhere", name, "solo-b", rs)
		}
	}()
	if _, err := d.Cordon(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := d.Drain(ctx, newProgressLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("drain: %+v; events %q", res, surges.events)
	if want := "Deployment surge/solo (1 → 2 → 1 replicas)"; len(res.Surged) != 1 || res.Surged[0] != want {
		t.Errorf("surged %q, want [%q]", res.Surged, want)
	}
	if err := waitReplicas(ctx, name, "solo", 1); err != nil {
		t.Errorf("replicas not put back: %v", err)
	}
	wantNoSlots(ctx, t, name)
	surges.mu.Lock()
	defer surges.mu.Unlock()
	if surges.counts["raised"] != 1 || surges.counts["lowered"] != 1 {
		t.Errorf("surge metric %v, want raised 1 and lowered 1", surges.counts)
	}
	if len(surges.events) != 2 || !strings.HasPrefix(surges.events[0], "Deployment solo DrainSurge: Raised the replicas") ||
		!strings.HasPrefix(surges.events[1], "Deployment solo DrainSurgeEnded: Put the replicas of Deployment surge/solo back to 1") {
		t.Errorf("Events %q, want DrainSurge then DrainSurgeEnded on the Deployment", surges.events)
	}
}

// With a HorizontalPodAutoscaler on the Deployment, the drain does not surge it: the progress
// message says why, and the replicas stay.
func TestSurgeRefusedUnderAnAutoscaler(t *testing.T) {
	const name = "surge-hpa"
	d := node(t, name)
	watchSurges(t, d, name)
	rs := replicaSet(t, name, "scaled")
	optIn(t, name, "scaled")
	one := int32(1)
	if _, err := client.AutoscalingV2().HorizontalPodAutoscalers(name).Create(context.Background(),
		&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "scaled"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &one, MaxReplicas: 3,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled"}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPod(t, name, "scaled-a", rs)
	waitRunning(t, name, 1)
	minBudget(t, name, "scaled", 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	progress := newProgressLog()
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := d.Drain(dctx, progress); done <- err }()
	msg, err := progress.waitFor(ctx, "pod surge-hpa/scaled-a", "PodDisruptionBudget scaled allows 0 disruptions",
		"cannot surge: HorizontalPodAutoscaler scaled scales Deployment surge-hpa/scaled")
	stop()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress: %s", msg)
	if err := waitReplicas(ctx, name, "scaled", 1); err != nil {
		t.Error(err)
	}
	wantNoSlots(ctx, t, name)
}

// A surge a killed daemon left behind (its slot Lease, the replicas raised) is put back by
// RestoreSurges; one whose replicas someone changed since is left as it is; both slots are
// freed.
func TestRestoreSurgesLeftBehind(t *testing.T) {
	const name = "surge-left"
	d := node(t, name)
	surges := watchSurges(t, d, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The node still cordoned, as a daemon killed mid-drain leaves it: the controller holds its
	// surges until the daemon ends them.
	if _, err := d.Cordon(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		app      string
		replicas int32
	}{{"raised", 2}, {"changed", 5}} {
		replicaSet(t, name, c.app)
		dep := setReplicas(t, name, c.app, c.replicas)
		holder := name
		if _, err := client.CoordinationV1().Leases(name).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: "nodeconfd-surge-" + strconv.Itoa(i), Labels: map[string]string{"nodeconfd.io/surge-node": name},
			Finalizers: []string{surge.Finalizer},
			Annotations: map[string]string{"nodeconfd.io/surge-workload": "Deployment/" + name + "/" + c.app,
				"nodeconfd.io/surge-pod": name + "/" + c.app + "-a", "nodeconfd.io/surge-raised": "true",
				"nodeconfd.io/surge-uid": string(dep.UID), "nodeconfd.io/surge-from": "1", "nodeconfd.io/surge-to": "2"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.RestoreSurges(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitReplicas(ctx, name, "raised", 1); err != nil {
		t.Error(err)
	}
	if err := waitReplicas(ctx, name, "changed", 5); err != nil {
		t.Error(err)
	}
	wantNoSlots(ctx, t, name)
	t.Logf("events: %q", surges.events)
	if len(surges.events) != 2 || !strings.Contains(strings.Join(surges.events, "\n"),
		"has 5 replicas, not the surge's 2: someone else changed them; left as they are") {
		t.Errorf("Events %q, want one for each surge, the second saying its replicas were left", surges.events)
	}
}

func optIn(t *testing.T, ns, name string) {
	t.Helper()
	patch := `{"metadata":{"annotations":{"` + surge.Annotation + `":"true"}}}`
	if _, err := client.AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setReplicas(t *testing.T, ns, name string, n int32) *appsv1.Deployment {
	t.Helper()
	patch := `{"spec":{"replicas":` + strconv.Itoa(int(n)) + `}}`
	dep, err := client.AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// minBudget creates a PodDisruptionBudget of minAvailable over app=<app> and waits until the
// control plane's disruption loop allows wantAllowed disruptions.
func minBudget(t *testing.T, ns, app string, minAvailable, wantAllowed int32) {
	t.Helper()
	ma := intstr.FromInt32(minAvailable)
	budgetOf(t, ns, app, policyv1.PodDisruptionBudgetSpec{MinAvailable: &ma}, wantAllowed)
}

func waitReplicas(ctx context.Context, ns, name string, want int32) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		dep, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && dep.Spec.Replicas != nil && *dep.Spec.Replicas == want, nil
	})
}

func wantNoSlots(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	leases, err := client.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(leases.Items) != 0 {
		t.Errorf("surge slots left: %d (%v)", len(leases.Items), err)
	}
}

// createPodOn creates a pod of owner o in namespace ns, bound to node.
func createPodOn(t *testing.T, node, ns, name string, o owner) {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": o.app},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: o.apiVersion, Kind: o.kind, Name: o.name, UID: o.uid, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.com/app"}}},
	}
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Error(err)
	}
}

// A bare ReplicaSet (no Deployment) in a namespace that opted in is surged through its scale
// subresource, found by discovery, and put back the same way.
func TestSurgeThroughScale(t *testing.T) {
	const name = "surge-rs"
	d := node(t, name)
	node(t, name+"-elsewhere")
	watchSurges(t, d, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+surge.Annotation+`":"true"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "bare"}
	one := int32(1)
	rs, err := client.AppsV1().ReplicaSets(name).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "bare"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := owner{"apps/v1", "ReplicaSet", rs.Name, rs.UID, "bare"}
	createPod(t, name, "bare-a", o)
	waitRunning(t, name, 1)
	minBudget(t, name, "bare", 1, 0)
	go func() {
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			rs, err := client.AppsV1().ReplicaSets(name).Get(ctx, "bare", metav1.GetOptions{})
			return err == nil && *rs.Spec.Replicas == 2, nil
		})
		if err == nil {
			createPodOn(t, name+"-elsewhere", name, "bare-b", o)
		}
	}()
	if _, err := d.Cordon(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := d.Drain(ctx, newProgressLog())
	if err != nil {
		t.Fatal(err)
	}
	if want := "ReplicaSet surge-rs/bare (1 → 2 → 1 replicas)"; len(res.Surged) != 1 || res.Surged[0] != want {
		t.Errorf("surged %q, want [%q]", res.Surged, want)
	}
	if rs, err := client.AppsV1().ReplicaSets(name).Get(ctx, "bare", metav1.GetOptions{}); err != nil || *rs.Spec.Replicas != 1 {
		t.Errorf("ReplicaSet bare ends with %v replicas (%v), want 1", rs.Spec.Replicas, err)
	}
	wantNoSlots(ctx, t, name)
}

// With every surge slot taken (here by a node that is gone), the drain does not surge and its
// progress names the slot, its node and its workload, so an administrator can free it.
func TestSurgeSlotsTaken(t *testing.T) {
	const name = "surge-full"
	d := node(t, name)
	watchSurges(t, d, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gone := "worker-gone"
	if _, err := client.CoordinationV1().Leases(name).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: "nodeconfd-surge-0", Labels: map[string]string{"nodeconfd.io/surge-node": gone},
		Annotations: map[string]string{"nodeconfd.io/surge-workload": "Deployment/shop/db", "nodeconfd.io/surge-from": "1",
			"nodeconfd.io/surge-to": "2"}}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &gone}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := replicaSet(t, name, "solo")
	optIn(t, name, "solo")
	createPod(t, name, "solo-a", rs)
	waitRunning(t, name, 1)
	minBudget(t, name, "solo", 1, 0)
	progress := newProgressLog()
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := d.Drain(dctx, progress); done <- err }()
	msg, err := progress.waitFor(ctx, "cannot surge: every surge slot is taken (--drain-surge-max=1: "+
		"Lease nodeconfd-surge-0 held by node worker-gone for Deployment shop/db)")
	stop()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress: %s", msg)
	if err := waitReplicas(ctx, name, "solo", 1); err != nil {
		t.Error(err)
	}
}
