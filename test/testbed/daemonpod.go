package testbed

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DaemonSetName is the daemon's DaemonSet (manifests/03-daemonset.yaml).
const DaemonSetName = "nodeconfd"

// DaemonPod creates (or finds) the Pod object of the daemon on node: what
// the DaemonSet controller would create, owned by the DaemonSet (so a
// drain leaves it in place), run as the daemon's ServiceAccount and bound
// to the node. Nothing runs in it; the daemon's credentials are a token
// bound to it (controlplane.KubeconfigForPod), which carries the node-name
// claim the admission policy keys on.
func (b *Bed) DaemonPod(ctx context.Context, node string) (*corev1.Pod, error) {
	ds, err := b.Kube.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSetName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading DaemonSet %s/%s: %w", Namespace, DaemonSetName, err)
	}
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: DaemonSetName + "-" + node, Namespace: Namespace, Labels: ds.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name,
				UID: ds.UID, Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: *ds.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	pods := b.Kube.CoreV1().Pods(Namespace)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = pods.Get(ctx, pod.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("creating the daemon's pod on node %s: %w", node, err)
	}
	return created, nil
}

// DaemonKubeconfig writes the daemon's kubeconfig for node: a token of
// its ServiceAccount bound to its pod there, not the admin's credentials.
func (b *Bed) DaemonKubeconfig(ctx context.Context, node string) (string, error) {
	pod, err := b.DaemonPod(ctx, node)
	if err != nil {
		return "", err
	}
	return b.CP.KubeconfigForPod(ctx, pod)
}
