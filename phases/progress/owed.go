package progress

import "slices"

// Owed is the post action that earlier updates left undone: each was
// written, then replaced before its reboot or its actions ran (a daemon
// killed after the write, or an update failed after it, while the node's
// desired config moved on). The node runs their files, which take effect
// only through that action, so the update that replaces them runs it too:
// prepare merges it into the update's own (plan.PostAction.Owing).
type Owed struct {
	// Configs are the written configs that owe it, oldest first.
	Configs []string `json:"configs"`
	// Action is the last one's post action, which its prepare merged with
	// what the earlier ones owed: a reboot, else their actions.
	Action ActionPlan `json:"action"`
	// BootID is the boot the last of them last wrote in (its Write.BootID;
	// in a record older than that field, the boot it asked to reboot
	// from): a later boot brought up their files, and paid it all.
	BootID string `json:"bootID,omitempty"`
	// BootStart is that boot's start (the record's Write.BootStart, or
	// Reboot.FromBootStart with Reboot.FromBootID).
	BootStart string `json:"bootStart,omitempty"`
}

// owedAfter is what the node owes once old is replaced. Before old's write
// was done, what old owed is still owed (its own writes are rolled back by
// the give-back step). Once it was done, old's post action is owed until
// it ran: old's prepare merged what old still owed into it, and left in
// old's record only what it merged (Owed), so it covers that too. A reboot
// on request owes nothing of its own: its request stays on the node and is
// answered by an update of its own.
func owedAfter(old *Record) *Owed {
	switch {
	case old.postActionRan(): // also the health gate's rollback, which runs after it
		return nil
	case !old.Done(StepWrite) || old.Prepare.Action == nil || old.RebootRequest != "":
		return old.Inherited.Owed.clone()
	}
	a := *old.Prepare.Action
	if !a.Reboot && len(a.Actions) == 0 {
		return nil
	}
	o := &Owed{Action: a, BootID: old.Write.BootID, BootStart: old.Write.BootStart}
	if o.BootID == "" {
		o.BootID, o.BootStart = old.Reboot.FromBootID, old.Reboot.FromBootStart
	}
	if old.Inherited.Owed != nil {
		o.Configs = slices.Clone(old.Inherited.Owed.Configs)
	}
	o.Configs = append(o.Configs, old.Desired)
	return o
}

// postActionRan reports whether the record's post action ran: its reboot
// (the node booted again: the step is done only then), or every step of the
// post action (the last, post-action, is reached only after the others).
func (r *Record) postActionRan() bool {
	if s := r.Step(StepReboot); s != nil && !s.Skipped {
		return true
	}
	if s := r.Step(StepReloadCRIO); s != nil && !s.Skipped {
		return true // it runs the whole list when the list reloads CRI-O
	}
	return r.Done(StepPostAction)
}

func (o *Owed) clone() *Owed {
	if o == nil {
		return nil
	}
	c := *o
	c.Configs = slices.Clone(o.Configs)
	c.Action.Actions = slices.Clone(o.Action.Actions)
	return &c
}
