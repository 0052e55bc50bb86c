package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReason(t *testing.T) {
	for cond, want := range map[string]string{
		Drained: "UpdateExecutedDrained", UpdateCompatible: "UpdatePreparedUpdateCompatible",
		ReloadedCRIO: "UpdatePostActionCompleteReloadedCRIO", Uncordoned: "UpdateCompleteUncordoned",
		UpdateExecuted: "UpdateExecuted", Resumed: "Resumed",
	} {
		if got := Reason(cond); got != want {
			t.Errorf("Reason(%s) = %s, want %s", cond, got, want)
		}
	}
}

func TestInitialAndSet(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	conds := Initial(t0)
	if len(conds) != len(Order()) {
		t.Fatalf("%d conditions, want %d", len(conds), len(Order()))
	}
	for _, c := range conds {
		if c.Type != NodeDegraded && (c.Status != metav1.ConditionFalse || c.Reason != ReasonNotYetOccurred ||
			c.Message != "This node has not yet entered the "+c.Type+" phase") {
			t.Errorf("initial %+v", c)
		}
	}
	t1 := metav1.NewTime(t0.Add(time.Minute))
	// Same status, new message: the transition time stays.
	if !Set(&conds, metav1.Condition{Type: Drained, Status: metav1.ConditionFalse, Reason: ReasonNotRequired, Message: "x", LastTransitionTime: t1}) {
		t.Fatal("no change reported")
	}
	if c := Find(conds, Drained); !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("transition time moved without a status change: %v", c.LastTransitionTime)
	}
	// Same everything: no change.
	if Set(&conds, metav1.Condition{Type: Drained, Status: metav1.ConditionFalse, Reason: ReasonNotRequired, Message: "x", LastTransitionTime: t1}) {
		t.Error("a write that changes nothing was reported as a change")
	}
	// New status: the time moves.
	Set(&conds, metav1.Condition{Type: Drained, Status: metav1.ConditionTrue, Reason: "r", Message: "y", LastTransitionTime: t1})
	if c := Find(conds, Drained); !c.LastTransitionTime.Equal(&t1) {
		t.Errorf("transition time did not move: %v", c.LastTransitionTime)
	}
	// ResetForUpdate leaves Updated and NodeDegraded alone.
	Set(&conds, metav1.Condition{Type: Updated, Status: metav1.ConditionTrue, Reason: "r", Message: "m", LastTransitionTime: t1})
	ResetForUpdate(&conds, t1)
	if Find(conds, Updated).Status != metav1.ConditionTrue || Find(conds, Drained).Reason != ReasonNotYetOccurred {
		t.Error("ResetForUpdate reset the wrong conditions")
	}
}
