package kubelet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// podWorker syncs the pods bound to one node, one at a time.
type podWorker struct {
	k        *Kubelet
	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	// terminating records when each terminating pod was first seen with a deletionTimestamp
	// (which has only second precision). Used by the single worker goroutine only.
	terminating map[types.UID]time.Time
}

func (k *Kubelet) startPodWorker(ctx context.Context) (*podWorker, error) {
	selector := fields.OneTermEqualSelector("spec.nodeName", k.nodeName).String()
	lw := cache.NewFilteredListWatchFromClient(k.client.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.FieldSelector = selector })
	w := &podWorker{
		k:        k,
		informer: cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{}),
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),

		terminating: map[types.UID]time.Time{},
	}
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			w.queue.Add(key)
		}
	}
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching pods of node %s: %w", k.nodeName, err)
	}
	return w, nil
}

// run serves the queue until ctx ends.
func (w *podWorker) run(ctx context.Context) {
	defer w.queue.ShutDown()
	go w.informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
		return
	}
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	for {
		key, quit := w.queue.Get()
		if quit {
			return
		}
		if err := w.sync(ctx, key); err != nil && ctx.Err() == nil {
			w.queue.AddRateLimited(key)
		} else {
			w.queue.Forget(key)
		}
		w.queue.Done(key)
	}
}

// sync moves one pod along: terminating pods are removed once their grace period is over,
// others are made Running and Ready.
func (w *podWorker) sync(ctx context.Context, key string) error {
	obj, exists, err := w.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		return w.remove(ctx, key, pod)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || running(pod) {
		return nil
	}
	updated := pod.DeepCopy()
	updated.Status = w.runningStatus(pod)
	_, err = w.k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // a newer version will come through the informer
	}
	if err != nil {
		return fmt.Errorf("marking pod %s running: %w", key, err)
	}
	return nil
}

// remove deletes a terminating pod for good once its (scaled) grace period has passed.
func (w *podWorker) remove(ctx context.Context, key string, pod *corev1.Pod) error {
	var grace time.Duration
	if pod.DeletionGracePeriodSeconds != nil {
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	seen, ok := w.terminating[pod.UID]
	if !ok {
		seen = time.Now()
		w.terminating[pod.UID] = seen
	}
	removeAt := seen.Add(time.Duration(float64(grace) * w.k.opts.GracePeriodScale))
	if wait := time.Until(removeAt); wait > 0 {
		w.queue.AddAfter(key, wait)
		return nil
	}
	zero := int64(0)
	err := w.k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		err = nil // gone, or replaced by a pod of the same name
	}
	if err != nil {
		return fmt.Errorf("removing pod %s: %w", key, err)
	}
	delete(w.terminating, pod.UID)
	return nil
}

// running reports whether the pod is already Running and Ready.
func running(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runningStatus is the status a kubelet reports once every container has started.
func (w *podWorker) runningStatus(pod *corev1.Pod) corev1.PodStatus {
	now := metav1.Now()
	ip := w.k.podIP()
	if pod.Spec.HostNetwork {
		ip = w.k.nodeIP()
	}
	s := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    w.k.nodeIP(),
		HostIPs:   []corev1.HostIP{{IP: w.k.nodeIP()}},
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		StartTime: &now,
		QOSClass:  pod.Status.QOSClass,
	}
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		s.Conditions = append(s.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	started := true
	for _, c := range pod.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, corev1.ContainerStatus{
			Name:        c.Name,
			Image:       c.Image,
			ImageID:     c.Image,
			ContainerID: fmt.Sprintf("testbed://%s-%s", pod.UID, c.Name),
			Ready:       true,
			Started:     &started,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return s
}
