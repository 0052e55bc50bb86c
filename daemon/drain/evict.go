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
// hidden in client-go's Retry-After loop.
func (d *Drainer) evict(ctx context.Context, pod *corev1.Pod) error {
	ev := &policyv1.Eviction{
		TypeMeta:      metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))},
	}
	return d.Client.Evict(ctx, ev)
}

// outcome is what an eviction request came to.
type outcome int

const (
	outcomeAccepted outcome = iota // the pod is being deleted
	outcomeGone                    // no pod of that UID any more
	outcomeBudget                  // refused by a PodDisruptionBudget (429)
	outcomeFailed                  // any other error; retried
)

// classify sorts an eviction's error and says why it was refused.
func classify(err error) (outcome, string) {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return outcomeAccepted, ""
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// NotFound: deleted. Conflict: the UID precondition failed, so the
		// name now belongs to a new pod and the one evicted is gone.
		return outcomeGone, ""
	case errors.As(err, &status) && hasBudgetCause(status.Status()):
		for _, c := range status.Status().Details.Causes {
			if c.Type == policyv1.DisruptionBudgetCause {
				return outcomeBudget, c.Message
			}
		}
	}
	return outcomeFailed, "eviction failed: " + err.Error()
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
