package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// evictionSizes are the namespace sizes the eviction policy is measured at
// (smaller in a smoke run).
func evictionSizes() []int {
	if smoke() {
		return []int{10, 100}
	}
	return []int{100, 3000}
}

// BenchmarkEvictionPolicy measures what the eviction policy
// (nodeconfd-own-node-evictions) costs the API server: the time of an
// eviction posted with a daemon's pod-bound token, of a Pod of another
// node (the policy refuses it after evaluating every Pod of the namespace
// as a parameter), in a namespace of 100 Pods and of 3,000, side by side,
// and the cost per Pod. Each iteration posts one eviction into each; the
// figures are medians. The cost is why the daemons' evictions have a
// priority level of their own (manifests/07-flowcontrol.yaml).
func BenchmarkEvictionPolicy(b *testing.B) {
	ctx := context.Background()
	const node = "bench-evict"
	evictionNamespaces := evictionSizes()
	cfg := daemonConfig(ctx, b, node)
	cfg.QPS, cfg.Burst = 1000, 1000
	daemon := kubernetes.NewForConfigOrDie(cfg)
	for _, n := range evictionNamespaces {
		evictionNamespace(ctx, b, n)
	}
	// The API server reads the parameters from its informer cache: wait
	// until the policy sees the largest namespace's last Pod.
	waitRefused(ctx, b, daemon, evictionNamespaces[len(evictionNamespaces)-1])
	took := make(map[int][]time.Duration)
	for b.Loop() {
		for _, n := range evictionNamespaces {
			start := time.Now()
			err := evict(ctx, daemon, n, n-1)
			took[n] = append(took[n], time.Since(start))
			if !apierrors.IsForbidden(err) {
				b.Fatalf("eviction in a namespace of %d pods: %v, want refused", n, err)
			}
		}
	}
	small, large := median(took[evictionNamespaces[0]]), median(took[evictionNamespaces[1]])
	b.ReportMetric(float64(small.Microseconds())/1000, fmt.Sprintf("ms/eviction-%d-pods", evictionNamespaces[0]))
	b.ReportMetric(float64(large.Microseconds())/1000, fmt.Sprintf("ms/eviction-%d-pods", evictionNamespaces[1]))
	per := float64((large - small).Nanoseconds()) / float64(evictionNamespaces[1]-evictionNamespaces[0]) / 1000
	b.ReportMetric(per, "µs/pod")
}

func evictionNs(n int) string { return fmt.Sprintf("bench-evict-%d", n) }

// evictionNamespace creates a namespace of n Pods bound to another node.
func evictionNamespace(ctx context.Context, b *testing.B, n int) {
	ns := evictionNs(n)
	if _, err := bed.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%05d", i), Namespace: ns},
				Spec: corev1.PodSpec{NodeName: "elsewhere", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
			if _, err := bed.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("creating the pods of %s: %v", ns, err)
	}
}

func evict(ctx context.Context, k kubernetes.Interface, n, i int) error {
	ns := evictionNs(n)
	return k.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("p%05d", i), Namespace: ns}})
}

func waitRefused(ctx context.Context, b *testing.B, k kubernetes.Interface, n int) {
	deadline := time.Now().Add(time.Minute)
	for {
		err := evict(ctx, k, n, n-1)
		if apierrors.IsForbidden(err) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the eviction policy did not refuse in time: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
