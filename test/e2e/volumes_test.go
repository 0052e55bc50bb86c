package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Issue 44: after the drain, a reboot waits for the drained pods' volumes
// to be detached. On a real node with its pod's token: a VolumeAttachment
// left for the node holds the reboot, RebootedNode says so (False,
// Waiting, naming it), the node does not reboot; once the attachment is
// gone the reboot goes ahead and the update completes with the contract's
// sequence but for the wait.
func TestRebootWaitsForVolumeDetach(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	config(t, "rendered-vd1-a", ign(nil))
	config(t, "rendered-vd1-b", ign(map[string]string{"/etc/motd.d/vd1": "after the volumes\n"}))
	n, log := node(t, "vd1", "rendered-vd1-a")
	pv := "pv-vd1"
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-vd1"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "vd1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
	vas := bed.Kube.StorageV1().VolumeAttachments()
	if _, err := vas.Create(ctx, va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vas.Delete(context.Background(), va.Name, metav1.DeleteOptions{}) })

	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-vd1-b"); err != nil {
		t.Fatal(err)
	}
	const want = "Waiting for 1 volume to detach before the reboot: VolumeAttachment csi-vd1 (PersistentVolume pv-vd1)"
	if err := waitMessage(ctx, log, "RebootedNode", "Waiting", want); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second) // a look or two more: still waiting
	if c := log.Condition("RebootedNode"); c == nil || c.Status != "False" || !strings.HasPrefix(c.Message, want) {
		t.Errorf("RebootedNode = %+v, want False, %q", c, want)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Fatalf("boots = %d with the volume attached, want 1", b)
	}
	if err := vas.Delete(ctx, va.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-vd1-b"); err != nil {
		t.Fatal(err)
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2", b)
	}
	var seq []string
	for _, tr := range log.Transitions(from) {
		if tr != "RebootedNode=False" {
			seq = append(seq, tr)
		}
	}
	wantSeq(t, seq, rebootSequence)
}
