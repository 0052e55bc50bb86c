package kubelet

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

func TestKubelet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir(), NoCRDs: true, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	client := kubernetes.NewForConfigOrDie(cp.RestConfig())

	k, err := Start(ctx, client, "worker-0", Options{GracePeriodScale: 0.01, Labels: map[string]string{"pool": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)

	const ns = "apps"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("NodeReady", func(t *testing.T) {
		node, err := client.CoreV1().Nodes().Get(ctx, "worker-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []string{"kubernetes.io/hostname", "node-role.kubernetes.io/worker", "pool"} {
			if _, ok := node.Labels[l]; !ok {
				t.Errorf("label %s missing: %v", l, node.Labels)
			}
		}
		if !nodeReady(node) {
			t.Errorf("node not Ready: %+v", node.Status.Conditions)
		}
		if node.Status.Allocatable.Cpu().IsZero() {
			t.Error("no allocatable CPU")
		}
	})

	t.Run("PodBecomesRunning", func(t *testing.T) {
		p := createPod(ctx, t, client, ns, "web-0", nil)
		if p.Status.PodIP == "" || len(p.Status.ContainerStatuses) != 1 {
			t.Errorf("status incomplete: %+v", p.Status)
		}
	})

	t.Run("EvictionRemovesPod", func(t *testing.T) {
		p := createPod(ctx, t, client, ns, "evict-me", nil)
		begin := time.Now()
		if err := client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
		waitGone(ctx, t, client, ns, p.Name)
		t.Logf("evicted pod removed after %s", time.Since(begin).Round(time.Millisecond))
	})

	t.Run("GracePeriodIsHonoured", func(t *testing.T) {
		grace := int64(100) // scaled to 1s
		p := createPod(ctx, t, client, ns, "slow", &grace)
		begin := time.Now()
		if err := client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		got, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod removed before its grace period: %v", err)
		}
		if got.DeletionTimestamp == nil {
			t.Fatal("pod not terminating")
		}
		waitGone(ctx, t, client, ns, p.Name)
		if d := time.Since(begin); d < 900*time.Millisecond {
			t.Errorf("pod removed after %s, want about 1s", d)
		}
	})

	t.Run("PDBBlocksEviction", func(t *testing.T) {
		p := createPod(ctx, t, client, ns, "guarded", nil)
		zero := intstr.FromInt32(0)
		if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "guarded"},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: &zero,
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitBudget(ctx, t, client, ns, "guarded", 0)
		err := client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns}})
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("evicting a pod guarded by maxUnavailable 0: got %v, want 429", err)
		}
		t.Logf("eviction refused: %v", err)
	})

	t.Run("PDBAllowsOneDisruption", func(t *testing.T) {
		a := createPod(ctx, t, client, ns, "replica-a", nil)
		b := createPod(ctx, t, client, ns, "replica-b", nil)
		for _, p := range []*corev1.Pod{a, b} {
			p.Labels["app"] = "replicas"
			if _, err := client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		one := intstr.FromInt32(1)
		if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: &one,
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "replicas"}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		evict := func(name string) error {
			return client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
		}
		waitBudget(ctx, t, client, ns, "replicas", 1)
		if err := evict(a.Name); err != nil {
			t.Fatalf("first eviction: %v", err)
		}
		if err := evict(b.Name); !apierrors.IsTooManyRequests(err) {
			t.Fatalf("second eviction while the first pod is terminating: %v, want 429", err)
		}
		waitGone(ctx, t, client, ns, a.Name)
	})
}

// createPod creates a pod bound to worker-0 labelled app=<name> and waits until it is Running.
func createPod(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, name string, grace *int64) *corev1.Pod {
	t.Helper()
	_, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:                      "worker-0",
			TerminationGracePeriodSeconds: grace,
			Containers:                    []corev1.Container{{Name: "main", Image: "registry.example/app:1"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err = client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && running(pod), err
	})
	if err != nil {
		t.Fatalf("waiting for pod %s to run: %v", name, err)
	}
	return pod
}

func waitGone(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("waiting for pod %s to go away: %v", name, err)
	}
}

// waitBudget waits until the disruption controller has processed a budget and allows
// `allowed` disruptions. Until it has, evictions are refused with a Retry-After.
func waitBudget(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, name string, allowed int32) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pdb, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DisruptionsAllowed == allowed, err
	})
	if err != nil {
		t.Fatalf("waiting for budget %s to allow %d disruptions: %v", name, allowed, err)
	}
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}
