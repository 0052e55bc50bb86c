package controlplane

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// disruptedPodTimeout is how long an evicted pod counts as disrupted while its deletion has not
// been observed, as in kube-controller-manager.
const disruptedPodTimeout = 2 * time.Minute

// runDisruptionController keeps PodDisruptionBudget status current until ctx ends: the part of
// kube-controller-manager the eviction API depends on. Without it every eviction of a pod a
// budget covers is refused with a Retry-After that client-go obeys for up to 100s.
//
// Simplification: the expected pod count is the number of matching pods (not the replicas of
// their controllers), so percentages and maxUnavailable also work for bare pods.
func runDisruptionController(ctx context.Context, client kubernetes.Interface) {
	factory := informers.NewSharedInformerFactory(client, 10*time.Second)
	pods := factory.Core().V1().Pods()
	pdbs := factory.Policy().V1().PodDisruptionBudgets()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer queue.ShutDown()
	enqueueNamespace := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if m, err := meta.Accessor(obj); err == nil {
			queue.Add(m.GetNamespace())
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueNamespace,
		UpdateFunc: func(_, obj any) { enqueueNamespace(obj) },
		DeleteFunc: enqueueNamespace,
	}
	if _, err := pods.Informer().AddEventHandler(handler); err != nil {
		return
	}
	if _, err := pdbs.Informer().AddEventHandler(handler); err != nil {
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	factory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		ns, quit := queue.Get()
		if quit {
			return
		}
		if err := syncBudgets(ctx, client, ns, pods.Lister().Pods(ns), pdbs.Lister().PodDisruptionBudgets(ns)); err != nil && ctx.Err() == nil {
			queue.AddRateLimited(ns)
		} else {
			queue.Forget(ns)
		}
		queue.Done(ns)
	}
}

type podLister interface {
	List(labels.Selector) ([]*corev1.Pod, error)
}

type budgetLister interface {
	List(labels.Selector) ([]*policyv1.PodDisruptionBudget, error)
}

// syncBudgets recomputes the status of every budget in one namespace.
func syncBudgets(ctx context.Context, client kubernetes.Interface, ns string, pods podLister, budgets budgetLister) error {
	all, err := budgets.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pdb := range all {
		selector := labels.Nothing()
		if pdb.Spec.Selector != nil {
			if selector, err = metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil {
				continue // invalid selectors are rejected by validation
			}
		}
		matching, err := pods.List(selector)
		if err != nil {
			return err
		}
		status := budgetStatus(pdb, matching, time.Now())
		if apiequality.Semantic.DeepEqual(status, pdb.Status) {
			continue
		}
		updated := pdb.DeepCopy()
		updated.Status = status
		if _, err := client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// budgetStatus computes a budget's status from the pods its selector matches.
func budgetStatus(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) policyv1.PodDisruptionBudgetStatus {
	disrupted := map[string]metav1.Time{}
	var expected, healthy int
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		expected++
		if p.DeletionTimestamp != nil {
			continue
		}
		if at, ok := pdb.Status.DisruptedPods[p.Name]; ok && now.Sub(at.Time) < disruptedPodTimeout {
			disrupted[p.Name] = at // evicted, deletion not seen yet
			continue
		}
		if podReady(p) {
			healthy++
		}
	}
	var desired int
	switch {
	case pdb.Spec.MinAvailable != nil:
		desired, _ = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, expected, true)
	case pdb.Spec.MaxUnavailable != nil:
		maxUnavailable, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, expected, true)
		desired = max(expected-maxUnavailable, 0)
	}
	allowed := max(healthy-desired, 0)
	status := policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: int32(allowed),
		CurrentHealthy:     int32(healthy),
		DesiredHealthy:     int32(desired),
		ExpectedPods:       int32(expected),
		Conditions:         append([]metav1.Condition(nil), pdb.Status.Conditions...),
	}
	if len(disrupted) > 0 {
		status.DisruptedPods = disrupted
	}
	cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue,
		Reason: policyv1.SufficientPodsReason, ObservedGeneration: pdb.Generation, LastTransitionTime: metav1.NewTime(now)}
	if allowed == 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	return status
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
