package kube_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
)

// The reboot waits for the node's VolumeAttachments but those of volumes
// a pod still on the node uses (a DaemonSet's, say); other nodes' never
// count.
func TestAttachedVolumes(t *testing.T) {
	va := func(name, node, pv string) *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: node,
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
	}
	pv := func(name, ns, claim string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: ns, Name: claim}}}
	}
	pod := func(name, phase, claim string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
			Spec: corev1.PodSpec{NodeName: "n1", Volumes: []corev1.Volume{{Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodPhase(phase)}}
	}
	client := fake.NewClientset(
		va("va-kept", "n1", "pv-kept"), va("va-evicted", "n1", "pv-evicted"), va("va-done", "n1", "pv-done"),
		va("va-other-node", "n2", "pv-other"),
		pv("pv-kept", "shop", "logs"), pv("pv-evicted", "shop", "db"), pv("pv-done", "shop", "job"),
		pod("agent", "Running", "logs"), pod("job", "Succeeded", "job"))
	c := &kube.Client{API: kubetest.API(client, nil), NodeName: "n1"}
	got, err := c.AttachedVolumes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"VolumeAttachment va-done (PersistentVolume pv-done)", "VolumeAttachment va-evicted (PersistentVolume pv-evicted)"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("AttachedVolumes = %q, want %q", got, want)
	}
}
