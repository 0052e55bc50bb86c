package engine

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// How the runner shows a run in the status: the conditions of the steps
// and their groups, from the list.

func (r *Runner[D]) set(t string, s metav1.ConditionStatus, reason, msg string) bool {
	return r.Status.Set(t, s, reason, msg)
}

// flush writes the staged status changes, if any, in one request.
func (r *Runner[D]) flush(ctx context.Context) error {
	if err := r.Flush(ctx); err != nil {
		return err
	}
	r.startPending = false
	return nil
}

// start stages the step's own condition going Unknown. A step's start is
// written at once when it shows something new (its group or its own
// condition going Unknown); other staged changes wait for the next write,
// so that a run costs few requests.
func (r *Runner[D]) start(ctx context.Context, n *node[D], started bool) error {
	s := n.step
	if c := s.Show.Condition; c != "" {
		started = r.set(c, metav1.ConditionUnknown, status.Reason(c), s.Show.Starting) || started
	}
	if (started || r.startPending) && !s.Show.Quick {
		if err := r.flush(ctx); err != nil {
			return r.stepError(n, err)
		}
	}
	return nil
}

// stageGroupStart stages the step's group going Unknown when the group has
// not started yet, and reports whether it did.
func (r *Runner[D]) stageGroupStart(n *node[D]) bool {
	if n.group == "" {
		return false
	}
	g := r.Status.Find(n.group)
	if g != nil && g.Status != metav1.ConditionFalse {
		return false
	}
	starting, _ := r.Groups(n.group)
	started := r.set(n.group, metav1.ConditionUnknown, n.group, starting)
	r.startPending = r.startPending || started
	return started
}

// stageDone stages the conditions of a finished step: its own condition,
// and its group once the group's last step is done.
func (r *Runner[D]) stageDone(n *node[D], st *progress.Step) {
	c := n.step.Show.Condition
	switch {
	case st.Skipped && c != "":
		r.set(c, metav1.ConditionFalse, status.ReasonNotRequired, st.Message)
	case c != "":
		r.set(c, metav1.ConditionTrue, st.Reason, st.Message)
	}
	if n.group == "" || !r.lastOfGroup(n) {
		return
	}
	if c == "" && !st.Skipped {
		r.set(n.group, metav1.ConditionTrue, st.Reason, st.Message)
		return
	}
	_, done := r.Groups(n.group)
	r.set(n.group, metav1.ConditionTrue, n.group, done)
}

func (r *Runner[D]) lastOfGroup(n *node[D]) bool {
	last := ""
	for i := range r.nodes {
		if r.nodes[i].group == n.group {
			last = r.nodes[i].step.Name
		}
	}
	return last == n.step.Name
}

// cond is the condition that reports the step: its own, else its group's,
// else its parent's (a sub-list), else (a step that reports through others:
// detect, give-back, adopt) UpdatePrepared, where a failure before the
// update's first group shows.
func (r *Runner[D]) cond(n *node[D]) string {
	switch {
	case n.step.Show.Condition != "":
		return n.step.Show.Condition
	case n.group != "":
		return n.group
	case r.parent != nil && r.parent != n:
		return r.cond(r.parent)
	}
	return status.UpdatePrepared
}

// event records one Event per finished step that reports a condition of its
// own, and one for a group whose steps reported none (a post action of
// None, the completion, the resume).
func (r *Runner[D]) event(n *node[D], msg string, took time.Duration) {
	if r.Events == nil || n.group == "" {
		return
	}
	if n.step.Show.Condition == "" {
		if !r.lastOfGroup(n) || r.evented[n.group] {
			return
		}
	}
	if r.evented == nil {
		r.evented = map[string]bool{}
	}
	r.evented[n.group] = true
	r.Events.Event(n.step.Show.OnNode, false, r.cond(n), fmt.Sprintf("%s (%s)", msg, took))
}

// Report sets the running step's condition message, with also (the
// conditions of its parts: the image-mode split of the write), and writes
// them. A failed write is logged here, once: live progress is best effort,
// so most steps go on without it; the reboot fails on it, not to go down
// unannounced.
func (r *Runner[D]) Report(ctx context.Context, message string, also ...Condition) error {
	r.settle(Settles{Conditions: also})
	n := r.current
	if n == nil {
		return nil
	}
	c := r.cond(n)
	held := ""
	if r.waiting {
		held = r.holding(n)
	}
	switch {
	case held != "": // the step's effect is on the node already: never False
		r.set(c, metav1.ConditionTrue, status.ReasonWaiting, held+"; the update waits: "+message)
	case r.waiting:
		r.set(c, metav1.ConditionFalse, status.ReasonWaiting, message)
	default:
		r.set(c, metav1.ConditionUnknown, status.Reason(c), message)
	}
	err := r.flush(context.WithoutCancel(ctx))
	if err != nil {
		r.Log.Warn("Cannot write the step's progress", zap.String("phase", n.step.Name), zap.Error(err))
	}
	return err
}

// holding is what the step's gates say it holds on the node already.
func (r *Runner[D]) holding(n *node[D]) string {
	for _, g := range n.gates {
		if g.Holding != nil {
			if h := g.Holding(r.Data); h != "" {
				return h
			}
		}
	}
	return ""
}

// settle stages what a step settles besides its own condition.
func (r *Runner[D]) settle(s Settles) { s.StageIn(r.Status) }

// Event records an Event on the MachineConfigNode (and the Node).
func (r *Runner[D]) Event(onNode, warning bool, reason, message string) {
	if r.Events != nil {
		r.Events.Event(onNode, warning, reason, message)
	}
}

// Waiting tells the Observer which wait holds the run, "" once none does.
func (r *Runner[D]) Waiting(reason string) { r.observer().Waiting(reason) }

// Clock returns the runner's time now.
func (r *Runner[D]) Clock() time.Time { return r.Now() }
