package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	workloadNamespace = "default"
	workloadName      = "web"
	workloadPods      = 2
)

// createWorkload puts pods on the node for the drain to evict. No
// controller-manager runs on the bed, so it creates a ReplicaSet and its
// pods itself; the pods name the ReplicaSet as their controller, as the
// daemon evicts only pods that a controller would recreate. It waits until
// the stand-in kubelet reports them running.
func createWorkload(ctx context.Context, kube kubernetes.Interface, node string) error {
	labels := map[string]string{"app": workloadName}
	replicas := int32(workloadPods)
	rs, err := kube.AppsV1().ReplicaSets(workloadNamespace).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: workloadName, Labels: labels},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating ReplicaSet %s: %w", workloadName, err)
	}
	owner := metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	for i := range workloadPods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:            fmt.Sprintf("%s-%d", workloadName, i),
				Labels:          labels,
				OwnerReferences: []metav1.OwnerReference{*owner},
			},
			Spec: podSpec(node),
		}
		if _, err := kube.CoreV1().Pods(workloadNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
	}
	return waitRunning(ctx, kube, labels)
}

func podSpec(node string) corev1.PodSpec {
	return corev1.PodSpec{
		NodeName:   node,
		Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1"}},
	}
}

// waitRunning waits until every pod with the labels is Running.
func waitRunning(ctx context.Context, kube kubernetes.Interface, labels map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	selector := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: labels})
	for {
		pods, err := kube.CoreV1().Pods(workloadNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err == nil {
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			if running == len(pods.Items) && running > 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the %s pods to run: %w", selector, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
