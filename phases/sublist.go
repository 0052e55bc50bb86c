package phases

import (
	"context"

	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// SubStep is one step of a sub-list: a list of its own that a step of the
// update runs inside itself (the health gate's rollback), with its own
// part of the progress record.
type SubStep struct {
	// Name is the sub-step's name in its record (a progress constant).
	Name string
	// Run does the sub-step and says what it did, for the status.
	Run func(ctx context.Context, d Data) (string, error)
}

// SubRecord is the part of the progress record a sub-list saves its done
// steps in (progress.Health for the rollback).
type SubRecord interface {
	Done(name string) bool
	Finish(s progress.Step)
}

// runSubList runs the steps of list that rec does not say are done, in
// order, and saves each in rec once done, so that a restart resumes at the
// first step not done and never runs a done one twice (a reboot above
// all). A failure is returned as the sub-step gave it, which says what it
// was doing; ErrRebooting too (the sub-list goes on after the boot).
func runSubList(ctx context.Context, d Data, rec SubRecord, list []SubStep) error {
	for _, s := range list {
		if rec.Done(s.Name) {
			continue
		}
		msg, err := s.Run(ctx, d)
		if err != nil {
			return err
		}
		rec.Finish(progress.Step{Name: s.Name, Message: msg})
		if err := d.SaveProgress(); err != nil {
			return err
		}
	}
	return nil
}
