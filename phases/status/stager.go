package status

import (
	"context"
	"slices"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Snapshot is a MachineConfigNode status as the daemon writes it: the
// conditions, status.configVersion, and the generation acted on.
type Snapshot struct {
	Conditions []metav1.Condition
	// Current and Desired are status.configVersion; Desired "" writes none.
	Current, Desired string
	// ObservedGeneration is the MachineConfigNode generation acted on; 0
	// writes none.
	ObservedGeneration int64
	// IrreconcilableChanges is status.irreconcilableChanges, written with
	// every snapshot; nil removes the field (irreconcilable.go).
	IrreconcilableChanges []mcfgv1.IrreconcilableChangeDiff
	// ETA is status.updateETA (eta.go); nil writes none (the field is
	// left as it is).
	ETA *ETA
}

// Writer writes a status snapshot to the API server in one request. It
// must not keep or change the snapshot's slices.
type Writer interface {
	WriteStatus(ctx context.Context, s Snapshot) error
}

// Stager is the one writer of a node's MachineConfigNode status: the update
// runner, the idle loop, adoption and the drift monitor all stage their
// changes here and flush them (one request per flush, none when nothing
// changed). What it holds is what the daemon last wrote plus what it staged
// since; a failed flush keeps the changes staged for the next one.
type Stager struct {
	w     Writer
	now   func() time.Time
	st    Snapshot
	dirty bool
}

// NewStager returns a stager holding the status as last read (st).
func NewStager(w Writer, now func() time.Time, st Snapshot) *Stager {
	st.Conditions = slices.Clone(st.Conditions)
	st.IrreconcilableChanges = slices.Clone(st.IrreconcilableChanges)
	return &Stager{w: w, now: now, st: st}
}

// Set stages a condition change, stamped with the stager's clock, and
// reports whether it changed anything (see the package's Set).
func (s *Stager) Set(t string, st metav1.ConditionStatus, reason, msg string) bool {
	c := metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(s.now().Truncate(time.Second))}
	if Set(&s.st.Conditions, c) {
		s.dirty = true
		return true
	}
	return false
}

// Reset stages every condition of the contract at False/NotYetOccurred
// (a MachineConfigNode just created, or one whose status was lost).
func (s *Stager) Reset() {
	s.st.Conditions = Initial(metav1.NewTime(s.now().Truncate(time.Second)))
	s.dirty = true
}

// ResetForUpdate stages step 1 of an update: every phase condition back to
// False/NotYetOccurred (see the package's ResetForUpdate), and no
// irreconcilable changes (they described the config refused before).
func (s *Stager) ResetForUpdate() {
	if ResetForUpdate(&s.st.Conditions, metav1.NewTime(s.now().Truncate(time.Second))) {
		s.dirty = true
	}
	s.SetIrreconcilableChanges(nil)
}

// SetVersions stages status.configVersion; a desired "" is ignored.
func (s *Stager) SetVersions(current, desired string) {
	if desired == "" || (s.st.Current == current && s.st.Desired == desired) {
		return
	}
	s.st.Current, s.st.Desired = current, desired
	s.dirty = true
}

// SetDesiredVersion stages status.configVersion.desired.
func (s *Stager) SetDesiredVersion(name string) { s.SetVersions(s.st.Current, name) }

// SetCurrentVersion stages status.configVersion.current.
func (s *Stager) SetCurrentVersion(name string) {
	if s.st.Desired != "" {
		s.SetVersions(name, s.st.Desired)
	}
}

// SetGeneration sets the generation the next write reports as observed.
// It stages no write by itself.
func (s *Stager) SetGeneration(g int64) { s.st.ObservedGeneration = g }

// Find returns a copy of the staged condition of type t, or nil.
func (s *Stager) Find(t string) *metav1.Condition {
	if c := Find(s.st.Conditions, t); c != nil {
		cp := *c
		return &cp
	}
	return nil
}

// Conditions returns a copy of the staged conditions.
func (s *Stager) Conditions() []metav1.Condition { return slices.Clone(s.st.Conditions) }

// Versions returns the staged status.configVersion.
func (s *Stager) Versions() (current, desired string) { return s.st.Current, s.st.Desired }

// Empty reports whether no condition is staged (a status never written).
func (s *Stager) Empty() bool { return len(s.st.Conditions) == 0 }

// Flush writes the staged changes, if any, in one request.
func (s *Stager) Flush(ctx context.Context) error {
	if !s.dirty {
		return nil
	}
	snap := s.st
	snap.Conditions = slices.Clone(s.st.Conditions)
	snap.IrreconcilableChanges = slices.Clone(s.st.IrreconcilableChanges)
	if s.st.ETA != nil {
		e := *s.st.ETA
		snap.ETA = &e
	}
	if err := s.w.WriteStatus(ctx, snap); err != nil {
		return err
	}
	s.dirty = false
	return nil
}

// RecordLost reports whether the node's daemon goes on without an
// unreadable progress record (NodeDegraded=True, ProgressRecordUnreadable),
// not yet past an update or an adoption.
func (s *Stager) RecordLost() bool {
	c := s.Find(NodeDegraded)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == ReasonRecordUnreadable
}
