package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// pullTimeLimit is how long a node that joins after the install may take,
// from its registration to its daemon container's start, pull included
// (issue 43: within a minute).
const pullTimeLimit = time.Minute

// pulledFromRegistry wants each node's daemon pod, on a node that joined
// after the release manifest was applied (testbed.StartCluster), to run
// the image index pushed to the bed's registry (its digest: nothing was
// imported into the node, so the kubelet pulled it), started within
// pullTimeLimit of the node's registration. It logs the kubelet's pull
// time.
func pulledFromRegistry(ctx context.Context, t *testing.T, names []string) {
	t.Helper()
	imgs := bed.Images()
	for _, name := range names {
		node, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod := daemonPod(ctx, t, name)
		if len(pod.Status.ContainerStatuses) == 0 {
			t.Fatalf("node %s: daemon pod %s has no container status", name, pod.Name)
		}
		cs := pod.Status.ContainerStatuses[0]
		// The reference by digest of what the kubelet pulled: the repository
		// (the tag's reference up to its last colon) and the index's digest.
		if want := imgs.DaemonRef[:strings.LastIndex(imgs.DaemonRef, ":")] + "@" + imgs.DaemonDigest; cs.ImageID != want {
			t.Errorf("node %s: the daemon runs image %s (%s), want the pushed index %s", name, cs.Image, cs.ImageID, want)
		}
		started := pod.CreationTimestamp.Time
		if r := cs.State.Running; r != nil {
			started = r.StartedAt.Time
		} else if tr := cs.LastTerminationState.Terminated; tr != nil {
			started = tr.StartedAt.Time
		}
		took := started.Sub(node.CreationTimestamp.Time)
		t.Logf("node %s: registered %s, daemon container started %s later; %s", name,
			node.CreationTimestamp.Format(time.TimeOnly), took, pullEvent(ctx, t, pod.Name))
		if took > pullTimeLimit {
			t.Errorf("node %s: the daemon started %s after the node registered, want within %s", name, took, pullTimeLimit)
		}
	}
}

// pullEvent returns the kubelet's Pulled event's message for the pod's
// image (it names the pull's duration), or says there was none.
func pullEvent(ctx context.Context, t *testing.T, pod string) string {
	evs, err := bed.Kube.CoreV1().Events(testbed.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + pod + ",reason=Pulled"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		return "kubelet: " + e.Message
	}
	return "no Pulled event"
}
