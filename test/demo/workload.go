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

// createWorkload creates a Deployment of idle pods (image, the bed's
// workload image, pulled from its registry) for the drain to evict, and
// waits until they run.
func createWorkload(ctx context.Context, kube kubernetes.Interface, image string) error {
	labels := map[string]string{"app": workloadName}
	replicas := int32(workloadPods)
	_, err := kube.AppsV1().Deployments(workloadNamespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: workloadName, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: new(int64),
				Containers: []corev1.Container{{Name: "idle", Image: image,
					ImagePullPolicy: corev1.PullIfNotPresent}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating Deployment %s: %w", workloadName, err)
	}
	return waitRunning(ctx, kube)
}

// waitRunning waits until the Deployment's pods all run.
func waitRunning(ctx context.Context, kube kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		d, err := kube.AppsV1().Deployments(workloadNamespace).Get(ctx, workloadName, metav1.GetOptions{})
		if err == nil && d.Status.ReadyReplicas == workloadPods && d.Status.UpdatedReplicas == workloadPods &&
			d.Status.Replicas == workloadPods {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the pods of Deployment %s to run: %w", workloadName, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
