package drain

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestProgressMessage(t *testing.T) {
	pdb := blocker{"apps/web-0", "PodDisruptionBudget web allows 0 disruptions (needs 3 healthy, has 3)"}
	for _, tc := range []struct {
		name string
		v    progressView
		want string
	}{
		{"waiting on terminations",
			progressView{Evicted: 7, Total: 12, Terminating: 2, Elapsed: 4200 * time.Millisecond, Timeout: time.Hour},
			"Evicted 7/12 pods, 2 terminating (4s of 1h0m0s)"},
		{"blocked by a budget",
			progressView{Evicted: 11, Total: 12, Blockers: []blocker{pdb}, Retrying: 1, Elapsed: 192 * time.Second, Timeout: time.Hour},
			"Evicted 11/12 pods; waiting on pod apps/web-0: PodDisruptionBudget web allows 0 disruptions (needs 3 healthy, has 3) " +
				"(retrying at most 5s apart, 3m12s of 1h0m0s)"},
		{"past the timeout",
			progressView{Evicted: 11, Total: 12, Blockers: []blocker{pdb}, Retrying: 1, Elapsed: 61 * time.Minute, Timeout: time.Hour},
			"Evicted 11/12 pods; waiting on pod apps/web-0: PodDisruptionBudget web allows 0 disruptions (needs 3 healthy, has 3) " +
				"(retrying at most 5s apart, 1h1m0s, past the 1h0m0s drain timeout)"},
		{"no timeout", progressView{Evicted: 1, Total: 2, Elapsed: 3 * time.Second}, "Evicted 1/2 pods (3s so far, no timeout)"},
		{"blockers sorted, several reasons",
			progressView{Evicted: 0, Total: 3, Blockers: []blocker{
				{"b/y", "eviction failed: etcdserver: request timed out"},
				{"a/x", "still terminating 12s past its 30s grace period"},
			}, Retrying: 1, Elapsed: 6 * time.Second, Timeout: time.Minute},
			"Evicted 0/3 pods; waiting on pod a/x: still terminating 12s past its 30s grace period; " +
				"pod b/y: eviction failed: etcdserver: request timed out (retrying at most 5s apart, 6s of 1m0s)"},
		{"only stuck terminating: nothing retried",
			progressView{Evicted: 1, Total: 1, Terminating: 1, Blockers: []blocker{
				{"a/x", "still terminating 12s past its 30s grace period"},
			}, Elapsed: 50 * time.Second, Timeout: time.Minute},
			"Evicted 1/1 pods, 1 terminating; waiting on pod a/x: still terminating 12s past its 30s grace period (50s of 1m0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.String(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// Pods blocked for one reason are one group naming at most five; at most
// five groups are named, the rest counted.
func TestProgressMessageGroupsByCause(t *testing.T) {
	budget := "PodDisruptionBudget web allows 0 disruptions (needs 3 healthy, has 3)"
	for _, tc := range []struct {
		name     string
		blockers []blocker
		want     string
	}{
		{"one budget, eight pods", blockersOf(budget, "apps/p", 8),
			"waiting on pods apps/p0, apps/p1, apps/p2, apps/p3, apps/p4 and 3 more: " + budget},
		{"two causes, interleaved", append(blockersOf(budget, "apps/web-", 2), blocker{"apps/db-0", "still terminating 12s past its 30s grace period"},
			blocker{"apps/web-9", budget}),
			"waiting on pod apps/db-0: still terminating 12s past its 30s grace period; pods apps/web-0, apps/web-1, apps/web-9: " + budget},
		{"seven causes", func() []blocker {
			var bs []blocker
			for i := range 7 {
				bs = append(bs, blocker{fmt.Sprintf("apps/p%d", i), fmt.Sprintf("cause %d", i)})
			}
			return append(bs, blocker{"apps/p9", "cause 6"})
		}(),
			"waiting on pod apps/p0: cause 0; pod apps/p1: cause 1; pod apps/p2: cause 2; pod apps/p3: cause 3; pod apps/p4: cause 4; and 3 more pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := progressView{Total: len(tc.blockers), Blockers: tc.blockers}
			want := fmt.Sprintf("Evicted 0/%d pods; ", len(tc.blockers)) + tc.want
			if got := v.Blocking(); got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
}

// blockersOf is n pods named prefix0… blocked for why.
func blockersOf(why, prefix string, n int) []blocker {
	var bs []blocker
	for i := range n {
		bs = append(bs, blocker{fmt.Sprintf("%s%d", prefix, i), why})
	}
	return bs
}

func TestStuckTerminating(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	grace := int64(30)
	for _, tc := range []struct {
		name    string
		deleted *time.Time
		want    string
	}{
		{"not terminating", nil, ""},
		{"within its grace period", ptr(now.Add(10 * time.Second)), ""},
		{"just at its end", ptr(now.Add(-300 * time.Millisecond)), ""},
		{"past it", ptr(now.Add(-42 * time.Second)), "still terminating 42s past its 30s grace period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{}
			if tc.deleted != nil {
				ts := metav1.NewTime(*tc.deleted)
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
			}
			if got := stuckTerminating(p, now); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestBudgetsOf(t *testing.T) {
	budget := func(name string, sel *metav1.LabelSelector, allowed int32) policyv1.PodDisruptionBudget {
		return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: 2, DesiredHealthy: 2}}
	}
	all := []policyv1.PodDisruptionBudget{
		budget("web", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, 0),
		budget("db", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, 1),
		budget("none", nil, 0),
		budget("everything", &metav1.LabelSelector{}, 1),
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	got := budgetsOf(p, all)
	if len(got) != 2 || got[0].Name != "web" || got[1].Name != "everything" {
		t.Fatalf("budgets of an app=web pod: %v", got)
	}
	want := "PodDisruptionBudget web allows 0 disruptions (needs 2 healthy, has 2); PodDisruptionBudget everything allows 1 disruption (needs 2 healthy, has 2)"
	if s := describeBudgets(got); s != want {
		t.Errorf("got  %q\nwant %q", s, want)
	}
}

func TestClassify(t *testing.T) {
	budgetErr := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	budgetErr.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: policyv1.DisruptionBudgetCause,
		Message: "The disruption budget web needs 3 healthy pods and has 3 currently"}}
	pods := schema.GroupResource{Resource: "pods"}
	pdbs := schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}
	for _, tc := range []struct {
		name    string
		err     error
		want    outcome
		wantWhy string
	}{
		{"accepted", nil, outcomeAccepted, ""},
		{"pod not found: checked", apierrors.NewNotFound(pods, "web-0"), outcomeCheck, ""},
		{"UID precondition: checked", apierrors.NewConflict(pods, "web-0", errors.New("Precondition failed: UID")), outcomeCheck, ""},
		{"budget conflict: checked", apierrors.NewConflict(pdbs, "web", errors.New("the object has been modified")), outcomeCheck, ""},
		{"budget not found: checked", apierrors.NewNotFound(pdbs, "web"), outcomeCheck, ""},
		{"refused by a budget", budgetErr, outcomeBudget, "The disruption budget web needs 3 healthy pods and has 3 currently"},
		{"throttled (429 without a budget)", apierrors.NewTooManyRequests("slow down", 1), outcomeFailed,
			"eviction failed: slow down"},
		{"server error", apierrors.NewInternalError(errors.New("This pod has more than one PodDisruptionBudget")), outcomeFailed,
			"eviction failed: Internal error occurred: This pod has more than one PodDisruptionBudget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := classify(tc.err)
			if got != tc.want || why != tc.wantWhy {
				t.Errorf("classify: %d %q, want %d %q", got, why, tc.want, tc.wantWhy)
			}
		})
	}
}

// A NotFound or Conflict eviction is decided by the pod: gone only when no
// pod of that UID is left; a PodDisruptionBudget's NotFound or Conflict with
// the pod still running is retried, never taken for the pod's departure.
func TestSettle(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	pdbs := schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "apps", UID: "u1"}}
	newer := pod.DeepCopy()
	newer.UID = "u2"
	deleting := pod.DeepCopy()
	deleting.DeletionTimestamp = ptr(metav1.Now())
	pdbConflict := apierrors.NewConflict(pdbs, "web", errors.New("the object has been modified"))
	pdbGone := apierrors.NewNotFound(pdbs, "web")
	podGone := apierrors.NewNotFound(pods, "web-0")
	for _, tc := range []struct {
		name     string
		evictErr error
		cur      *corev1.Pod
		getErr   error
		want     outcome
		wantWhy  string
	}{
		{"pod deleted", podGone, nil, podGone, outcomeGone, ""},
		{"UID precondition: a new pod of the name", apierrors.NewConflict(pods, "web-0", errors.New("UID mismatch")), newer, nil,
			outcomeGone, ""},
		{"budget conflict, pod running", pdbConflict, pod, nil, outcomeFailed,
			"eviction failed: Operation cannot be fulfilled on poddisruptionbudgets.policy \"web\": the object has been modified"},
		{"budget deleted, pod running", pdbGone, pod, nil, outcomeFailed,
			"eviction failed: poddisruptionbudgets.policy \"web\" not found"},
		{"budget conflict, pod being deleted", pdbConflict, deleting, nil, outcomeAccepted, ""},
		{"budget conflict, pod unreadable", pdbConflict, nil, apierrors.NewServiceUnavailable("etcd down"), outcomeFailed,
			"eviction failed: Operation cannot be fulfilled on poddisruptionbudgets.policy \"web\": the object has been modified; " +
				"reading the pod also failed: etcd down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := settle(pod, tc.evictErr, tc.cur, tc.getErr)
			if got != tc.want || why != tc.wantWhy {
				t.Errorf("settle: %d %q, want %d %q", got, why, tc.want, tc.wantWhy)
			}
		})
	}
}
