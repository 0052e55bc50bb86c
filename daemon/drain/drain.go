// Package drain cordons, drains and uncordons the daemon's node with
// k8s.io/kubectl/pkg/drain: evictions respect PodDisruptionBudgets,
// DaemonSet pods are left alone and emptyDir data is deleted.
package drain

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kdrain "k8s.io/kubectl/pkg/drain"

	"github.com/nodeconfd/nodeconfd/phases"
)

// ReportEvery is the shortest interval between two progress reports.
const ReportEvery = 3 * time.Second

// Drainer drains one node.
type Drainer struct {
	Client   kubernetes.Interface
	NodeName string
	// Timeout bounds one drain; 0 means no limit.
	Timeout time.Duration
	// EvictUnowned allows evicting pods that no controller will recreate.
	EvictUnowned bool
	// Log receives the library's own progress lines.
	Log io.Writer
}

// Cordon marks the node unschedulable; it reports false when it already was.
func (d *Drainer) Cordon(ctx context.Context) (bool, error) {
	node, err := d.Client.CoreV1().Nodes().Get(ctx, d.NodeName, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	if node.Spec.Unschedulable {
		return false, nil
	}
	return true, d.setUnschedulable(ctx, node, true)
}

// Uncordon marks the node schedulable.
func (d *Drainer) Uncordon(ctx context.Context) error {
	node, err := d.Client.CoreV1().Nodes().Get(ctx, d.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return d.setUnschedulable(ctx, node, false)
}

func (d *Drainer) setUnschedulable(ctx context.Context, node *corev1.Node, v bool) error {
	h := d.helper(ctx)
	return kdrain.RunCordonOrUncordon(h, node, v)
}

func (d *Drainer) helper(ctx context.Context) *kdrain.Helper {
	out := d.Log
	if out == nil {
		out = io.Discard
	}
	return &kdrain.Helper{
		Ctx:                 ctx,
		Client:              d.Client,
		Force:               d.EvictUnowned,
		GracePeriodSeconds:  -1,
		IgnoreAllDaemonSets: true,
		DeleteEmptyDirData:  true,
		Timeout:             d.Timeout,
		Out:                 out,
		ErrOut:              out,
	}
}

// Drain evicts every pod of the node but DaemonSet and mirror pods, and
// reports "Evicted i/n pods" as they go.
func (d *Drainer) Drain(ctx context.Context, report func(string)) (phases.DrainResult, error) {
	h := d.helper(ctx)
	list, errs := h.GetPodsForDeletion(d.NodeName)
	if len(errs) > 0 {
		return phases.DrainResult{}, fmt.Errorf("listing pods to evict: %v", errs)
	}
	total := len(list.Pods())
	var mu sync.Mutex
	evicted := 0
	last := time.Now()
	report(fmt.Sprintf("Evicting %d pods", total))
	h.OnPodDeletionOrEvictionFinished = func(pod *corev1.Pod, usingEviction bool, err error) {
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		evicted++
		// At most one status write every few seconds, and the last one.
		if evicted == total || time.Since(last) >= ReportEvery {
			last = time.Now()
			report(fmt.Sprintf("Evicted %d/%d pods", evicted, total))
		}
	}
	if err := h.DeleteOrEvictPods(list.Pods()); err != nil {
		return phases.DrainResult{Evicted: evicted}, err
	}
	return phases.DrainResult{Evicted: evicted}, nil
}
