package drain

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// evict asks the Eviction API to evict the pod with this UID (not a newer
// pod of the same name), with the pod's own grace period. It makes one
// request: a refusal is retried by the drain's loop, where it shows, not
// hidden in client-go's Retry-After loop. A NotFound or Conflict answer is
// checked against the pod itself (see settle), since the Eviction API
// returns those for the pod's PodDisruptionBudget too.
func (d *Drainer) evict(ctx context.Context, pod *corev1.Pod) (outcome, string) {
	ev := &policyv1.Eviction{
		TypeMeta:      metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))},
	}
	err := d.Client.Evict(ctx, ev)
	out, why := classify(err)
	if out != outcomeCheck {
		return out, why
	}
	cur, gerr := d.Client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	return settle(pod, err, cur, gerr)
}

// outcome is what an eviction request came to.
type outcome int

const (
	outcomeAccepted outcome = iota // the pod is being deleted
	outcomeGone                    // no pod of that UID any more
	outcomeBudget                  // refused by a PodDisruptionBudget (429)
	outcomeFailed                  // any other error; retried
	// outcomeCheck is a NotFound or Conflict: about the pod (deleted, or
	// its UID precondition failed because the name now belongs to a new
	// pod) or about its PodDisruptionBudget (deleted meanwhile, or its
	// status update lost 20 conflicts in a row to concurrent evictions).
	// Only a read of the pod tells which.
	outcomeCheck
)

// classify sorts an eviction's error and says why it was refused.
func classify(err error) (outcome, string) {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return outcomeAccepted, ""
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return outcomeCheck, ""
	case errors.As(err, &status) && hasBudgetCause(status.Status()):
		for _, c := range status.Status().Details.Causes {
			if c.Type == policyv1.DisruptionBudgetCause {
				return outcomeBudget, c.Message
			}
		}
	}
	return outcomeFailed, "eviction failed: " + err.Error()
}

// settle decides a NotFound or Conflict eviction (evictErr) by a fresh read
// of the pod (cur, or the read's error): the pod evicted is gone when no pod
// of its name or only one of another UID exists, being deleted when it has
// a deletionTimestamp; otherwise the error was about something else (its
// PodDisruptionBudget) and the eviction is retried.
func settle(pod *corev1.Pod, evictErr error, cur *corev1.Pod, getErr error) (outcome, string) {
	switch {
	case apierrors.IsNotFound(getErr):
		return outcomeGone, ""
	case getErr != nil:
		return outcomeFailed, "eviction failed: " + evictErr.Error() + "; reading the pod also failed: " + getErr.Error()
	case cur.UID != pod.UID:
		return outcomeGone, ""
	case cur.DeletionTimestamp != nil:
		return outcomeAccepted, ""
	}
	return outcomeFailed, "eviction failed: " + evictErr.Error()
}

func hasBudgetCause(s metav1.Status) bool {
	if s.Details == nil {
		return false
	}
	for _, c := range s.Details.Causes {
		if c.Type == policyv1.DisruptionBudgetCause {
			return true
		}
	}
	return false
}
