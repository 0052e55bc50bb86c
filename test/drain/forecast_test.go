package drain

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
	"github.com/nodeconfd/nodeconfd/daemon/drain"
)

// The drain forecast (nodeconfd plan --node, and the wait before the cordon) agrees with what
// the drain then does, on five layouts of pods: the pods it evicts, those it leaves in place,
// and the pods it takes last.
func TestForecastAgreesWithDrain(t *testing.T) {
	for _, c := range []struct {
		name   string
		layout func(t *testing.T, d *drain.Drainer, node string)
	}{
		{"fc-mixed", func(t *testing.T, _ *drain.Drainer, node string) {
			rs := replicaSet(t, node, "web")
			for i := range 3 {
				createPod(t, node, fmt.Sprintf("web-%d", i), rs)
			}
			createPod(t, node, "db-0", statefulSet(t, node, "db"))
			createPod(t, node, "agent", daemonSet(t, node, "agent"))
			createPod(t, node, "cache", rs, withEmptyDir)
		}},
		{"fc-unowned", func(t *testing.T, d *drain.Drainer, node string) {
			d.EvictUnowned = true
			createPod(t, node, "bare", owner{})
			createPod(t, node, "web-0", replicaSet(t, node, "web"))
		}},
		{"fc-last", func(t *testing.T, d *drain.Drainer, node string) {
			d.Last = labels.SelectorFromSet(labels.Set{"app": "store"})
			createPod(t, node, "store-0", statefulSet(t, node, "store"))
			rs := replicaSet(t, node, "web")
			createPod(t, node, "web-0", rs)
			createPod(t, node, "web-1", rs)
		}},
		{"fc-budget", func(t *testing.T, _ *drain.Drainer, node string) {
			rs := replicaSet(t, node, "web")
			for i := range 3 {
				createPod(t, node, fmt.Sprintf("web-%d", i), rs)
			}
			waitRunning(t, node, 3)
			budget(t, node, "web", 3, 3)
		}},
		{"fc-mirror", func(t *testing.T, _ *drain.Drainer, node string) {
			createPod(t, node, "etcd-"+node, owner{}, func(p *corev1.Pod) {
				p.Annotations = map[string]string{"kubernetes.io/config.mirror": "hash"}
			})
			createPod(t, node, "web-0", replicaSet(t, node, "web"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := node(t, c.name)
			c.layout(t, d, c.name)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			f, err := d.Forecast(ctx)
			if err != nil || f.Refused != "" {
				t.Fatalf("forecast: %+v, %v", f, err)
			}
			var forecast, last []string
			for _, p := range f.Evict {
				forecast = append(forecast, p.Pod)
				if p.Last {
					last = append(last, p.Pod)
				}
			}
			var mu sync.Mutex
			var order []string
			ev := &evictions{API: kubetest.API(client, nil), before: func(e *policyv1.Eviction) {
				mu.Lock()
				defer mu.Unlock()
				if !slices.Contains(order, e.Namespace+"/"+e.Name) {
					order = append(order, e.Namespace+"/"+e.Name)
				}
			}}
			d.Client = ev
			res, err := d.Drain(ctx, newProgressLog())
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(forecast)
			done := slices.Sorted(slices.Values(order))
			if !slices.Equal(forecast, done) || res.Evicted != len(forecast) || res.Skipped != f.Skipped {
				t.Errorf("forecast evicts %v and leaves %d; the drain evicted %v (%d) and left %d", forecast, f.Skipped, done,
					res.Evicted, res.Skipped)
			}
			if n := len(last); n > 0 && !slices.Equal(sortedTail(order, n), last) {
				t.Errorf("forecast takes %v last; the drain evicted in the order %v", last, order)
			}
			t.Logf("forecast %d to evict (%s), %d left in place, %d taken last: as the drain did", len(forecast),
				strings.Join(forecast, ", "), f.Skipped, len(last))
		})
	}
}

func sortedTail(s []string, n int) []string { return slices.Sorted(slices.Values(s[len(s)-n:])) }

// WouldBlock names the pods a budget at zero holds that no surge could free: every such pod
// with surges off; with surges on, not a pod whose Deployment opted in (minAvailable), but
// one under an autoscaler (saying so) and one whose budget is maxUnavailable 0.
func TestWouldBlock(t *testing.T) {
	const name = "wb"
	d := node(t, name)
	solo := replicaSet(t, name, "solo")
	optIn(t, name, "solo")
	createPod(t, name, "solo-a", solo)
	pinned := replicaSet(t, name, "pinned")
	optIn(t, name, "pinned")
	createPod(t, name, "pinned-a", pinned)
	waitRunning(t, name, 2)
	minBudget(t, name, "solo", 1, 0)
	budget(t, name, "pinned", 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	check := func(what string, want, not []string) {
		t.Helper()
		msg, err := d.WouldBlock(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q, want %q in it", what, msg, w)
			}
		}
		for _, n := range not {
			if strings.Contains(msg, n) {
				t.Errorf("%s: %q, want no %q in it", what, msg, n)
			}
		}
	}
	check("surges off", []string{"The drain could not finish now: pod wb/pinned-a: PodDisruptionBudget pinned allows 0 disruptions",
		"pod wb/solo-a: PodDisruptionBudget solo allows 0 disruptions"}, []string{"cannot surge"})
	watchSurges(t, d, name)
	check("surges on", []string{"pod wb/pinned-a: PodDisruptionBudget pinned"}, []string{"solo-a"})
	one := int32(1)
	if _, err := client.AutoscalingV2().HorizontalPodAutoscalers(name).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "solo"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &one, MaxReplicas: 2,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "solo"}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("under an autoscaler", []string{"pod wb/solo-a: PodDisruptionBudget solo allows 0 disruptions (needs 1 healthy, has 1); " +
		"cannot surge: HorizontalPodAutoscaler solo scales Deployment wb/solo"}, nil)
}
