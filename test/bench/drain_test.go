package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/test/testbed/kubelet"
)

// drainPods is how many pods each drain evicts.
const drainPods = 100

// BenchmarkDrain100 drains a node of 100 ReplicaSet pods with emptyDir
// volumes (and one DaemonSet pod, left in place), no budget blocking, with
// the daemon's drainer (the forecast before the cordon, cordon + drain, as
// the daemon's ServiceAccount with the daemon's client rate limits) and
// with `kubectl drain
// --ignore-daemonsets --delete-emptydir-data` (the kubectl built from the
// same Kubernetes release), side by side: each iteration runs one drain of
// each. It reports the medians of both and their ratio. The stand-in
// kubelet removes an evicted pod after 1% of its 30s grace period.
func BenchmarkDrain100(b *testing.B) {
	const node = "bench-drain"
	ctx := context.Background()
	k, err := kubelet.Start(ctx, bed.Kube, node, kubelet.Options{GracePeriodScale: 0.01})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(k.Stop)
	rs := drainWorkload(ctx, b, node)
	cfg := daemonConfig(ctx, b, node)
	cfg.QPS, cfg.Burst = kube.QPS, kube.Burst
	api, err := kubeapi.NewAPI(cfg) // the daemon's own client
	if err != nil {
		b.Fatal(err)
	}
	// As the daemon runs it by default: surges on (the slot Leases listed
	// before the drain) and the forecast before the cordon.
	d := &drain.Drainer{Client: api, NodeName: node, Timeout: time.Hour,
		Surge: drain.SurgeOptions{Max: 1, Namespace: "nodeconfd"}}

	var ours, kubectl []time.Duration
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		createDrainPods(ctx, b, node, rs, fmt.Sprintf("r%d", round))
		start := time.Now()
		if why, err := d.WouldBlock(ctx); err != nil || why != "" {
			b.Fatalf("forecast: %q, %v", why, err)
		}
		if _, err := d.Cordon(ctx); err != nil {
			b.Fatal(err)
		}
		res, err := d.Drain(ctx, nopProgress{})
		if err != nil {
			b.Fatal(err)
		}
		ours = append(ours, time.Since(start))
		if res.Evicted != drainPods {
			b.Fatalf("evicted %d pods, want %d", res.Evicted, drainPods)
		}
		if err := d.Uncordon(ctx); err != nil {
			b.Fatal(err)
		}

		if smoke() { // ours only: kubectl's takes 20 s
			b.Logf("round %d: nodeconfd %s", round, ours[round-1].Round(time.Millisecond))
			b.StartTimer()
			continue
		}
		createDrainPods(ctx, b, node, rs, fmt.Sprintf("k%d", round))
		start = time.Now()
		if out, err := bed.Kubectl(ctx, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data"); err != nil {
			b.Fatalf("kubectl drain: %v\n%s", err, out)
		}
		kubectl = append(kubectl, time.Since(start))
		if out, err := bed.Kubectl(ctx, "uncordon", node); err != nil {
			b.Fatalf("kubectl uncordon: %v\n%s", err, out)
		}
		b.Logf("round %d: nodeconfd %s, kubectl drain %s", round, ours[round-1].Round(time.Millisecond),
			kubectl[round-1].Round(time.Millisecond))
		b.StartTimer()
	}
	if smoke() {
		b.ReportMetric(median(ours).Seconds(), "s/drain-nodeconfd")
		return
	}
	mo, mk := median(ours), median(kubectl)
	b.ReportMetric(mo.Seconds(), "s/drain-nodeconfd")
	b.ReportMetric(mk.Seconds(), "s/drain-kubectl")
	b.ReportMetric(float64(mk)/float64(mo), "kubectl/nodeconfd")
}

type nopProgress struct{}

func (nopProgress) Progress(string) {}
func (nopProgress) Blocked(string)  {}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// drainWorkload creates the owners (no controller runs here) and the
// DaemonSet's pod on the node.
func drainWorkload(ctx context.Context, b *testing.B, node string) *appsv1.ReplicaSet {
	b.Helper()
	if _, err := bed.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: node}},
		metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	tmpl := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/app"}}}}
	}
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	rs, err := bed.Kube.AppsV1().ReplicaSets(node).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Selector: sel("web"), Template: tmpl("web")}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ds, err := bed.Kube.AppsV1().DaemonSets(node).Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: sel("agent"), Template: tmpl("agent")}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	yes := true
	if _, err := bed.Kube.CoreV1().Pods(node).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Labels: map[string]string{"app": "agent"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.com/agent"}}},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	return rs
}

// createDrainPods creates drainPods ReplicaSet pods with an emptyDir volume
// on the node and waits until the kubelet runs them all.
func createDrainPods(ctx context.Context, b *testing.B, node string, rs *appsv1.ReplicaSet, prefix string) {
	b.Helper()
	yes := true
	for i := 0; i < drainPods; i++ {
		_, err := bed.Kube.CoreV1().Pods(node).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%s-%d", prefix, i), Labels: map[string]string{"app": "web"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
					Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.com/web"}},
				Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := bed.Kube.CoreV1().Pods(node).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return running == drainPods+1, nil
	})
	if err != nil {
		b.Fatalf("waiting for %d pods to run on %s: %v", drainPods+1, node, err)
	}
}
