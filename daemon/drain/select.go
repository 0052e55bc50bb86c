package drain

import (
	"github.com/nodeconfd/nodeconfd/phases/plan"

	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases"
)

// mirrorPodAnnotation marks the API server's copy of a static pod.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// Selection is what a drain does with each pod of the node.
type Selection struct {
	// Evict are the pods to evict.
	Evict []*corev1.Pod
	// Skipped counts the DaemonSet and mirror pods left in place.
	Skipped int
}

// UnownedError names the pods no controller would recreate, which are
// evicted only when the administrator allows it.
type UnownedError struct {
	Pods []string
}

// Unwrap marks the error as a drain that cannot go on (it undoes its cordon).
func (e *UnownedError) Unwrap() error { return phases.ErrCannotDrain }

func (e *UnownedError) Error() string {
	return fmt.Sprintf("%s without a controller that would recreate them: %s (allow their eviction with "+
		"--evict-unowned-pods, or move them off the node)", plan.Plural(len(e.Pods), "pod"), strings.Join(e.Pods, ", "))
}

// Select decides, for every pod of the node, whether the drain evicts it:
//   - mirror pods (static pods) and DaemonSet pods stay: evicting them is
//     pointless, the kubelet or the DaemonSet puts them back;
//   - finished pods (Succeeded, Failed) are evicted whatever owns them:
//     nothing of theirs runs any more;
//   - pods without a controller are evicted only when evictUnowned is set,
//     else the selection fails with an *UnownedError naming them;
//   - every other pod is evicted, emptyDir volumes or not (their data goes
//     with the pod).
func Select(pods []*corev1.Pod, evictUnowned bool) (Selection, error) {
	var s Selection
	var unowned []string
	for _, p := range pods {
		switch {
		case p.Annotations[mirrorPodAnnotation] != "":
			s.Skipped++
		case isDaemonSetPod(p):
			s.Skipped++
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			s.Evict = append(s.Evict, p)
		case metav1.GetControllerOf(p) == nil && !evictUnowned:
			unowned = append(unowned, podName(p))
		default:
			s.Evict = append(s.Evict, p)
		}
	}
	if len(unowned) > 0 {
		sort.Strings(unowned)
		return Selection{}, &UnownedError{Pods: unowned}
	}
	return s, nil
}

func isDaemonSetPod(p *corev1.Pod) bool {
	c := metav1.GetControllerOf(p)
	return c != nil && c.Kind == "DaemonSet" && strings.HasPrefix(c.APIVersion, "apps/")
}

// podName is how messages name a pod: namespace/name.
func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
