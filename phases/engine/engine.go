// Package engine runs a list of steps: the shapes of a node's update, and
// nothing of its steps. A list is a value read top to bottom: steps, groups
// (a status condition and its children), gates (named waits that hold the
// step after them), commit points (from which a new desired config no
// longer stops the run) and sub-lists (a step's own list, run by the same
// runner with its own part of the record). The Runner owns what every step
// shares: skipping what is done or not needed, the logs, the metrics'
// facts, the status conditions and Events, saving the record after each
// step, the stop and its cause, undo at a cut, and error wrapping.
// Package phases writes the update's lists with it (kubeadm's workflow and
// Ignition's stages are its models).
package engine

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Item is one entry of a list: a Step, a Group, a Gate or a Commit.
type Item[D any] interface {
	// flatten appends the item's steps to out, in order, each with the
	// group, gates and commit point that hold it.
	flatten(out []node[D], at place[D]) ([]node[D], place[D])
}

// Step is one step of a list. D is what the steps see (package phases:
// its Data).
type Step[D any] struct {
	// Name is the step's name in the record, the logs and the metrics.
	Name string
	// Needed reports whether the run needs this step, and if not, why;
	// nil means always needed. A step not needed is recorded as skipped.
	Needed func(d D) (bool, string)
	// Run does the step and says what it did.
	Run func(ctx context.Context, d D) (Outcome, error)
	// Reload restores, after a restart, what a done step had produced in
	// memory (the plan, for prepare), and says again the status it settles
	// that depends on the node now (the runner stages it); nil when nothing.
	Reload func(ctx context.Context, d D) (Settles, error)
	// Cut, when set, says the step may be cut short: see Cut.
	Cut *Cut[D]
	// Show is how the step shows in the status and the Events.
	Show Show
}

// Show is how a step shows in the status and the Events.
type Show struct {
	// Condition is the condition the step reports; "" reports through its
	// group (the group then takes the step's outcome).
	Condition string
	// Starting is the condition's message while the step runs.
	Starting string
	// Quick marks a step whose start is not worth a write of its own: its
	// start is written with its end.
	Quick bool
	// OnNode puts the step's Event on the Node too, not only on the
	// MachineConfigNode.
	OnNode bool
}

// Cut marks a step that may be cut short, and how it is given back. Before
// the list's Commit, a new desired config (ErrSuperseded) cuts the step and
// its gates at once; a pause (a *PausedError) cuts its Run when Pause is
// set; a shutdown (ErrStopped) ends its gates at once and its Run a grace
// period later. The step's Run sees it as its context, cancelled with the
// cause; the runner then calls Undo (on a cut, not a shutdown) with a
// context that is not, and the run stops with the cause. A step without
// Cut runs to its end, whatever happens.
type Cut[D any] struct {
	// Undo gives back what the step holds on the node (a cordon) and says
	// the status that settles (the runner stages it); nil for nothing.
	Undo func(ctx context.Context, d D, cause error) (Settles, error)
	// Pause makes a pause cut the step's Run too (the drain).
	Pause bool
}

// Gate is a named wait that holds the step after it in the list: it runs
// once that step is needed, before it starts, and returns once it may
// start. While it waits the step's condition stays False, not started; a
// step's Report sets its message (reason Waiting).
type Gate[D any] struct {
	// Name names the wait in the logs.
	Name string
	Wait func(ctx context.Context, d D) error
	// Holding, when set, says what the held step already holds on the node
	// ("" for nothing): while the gate waits, the step's condition then
	// says True, reason Waiting, this text and what the gate waits for.
	Holding func(d D) string
	// Release, when set, runs once the wait ends, however it ends (a cut,
	// a shutdown), with a context that is not cancelled: what the wait
	// took while it waited is given back.
	Release func(ctx context.Context, d D)
}

// Group is a primary status condition and its children: it goes Unknown
// as its first step starts and True once its last step is done.
type Group[D any] struct {
	Condition string
	Items     []Item[D]
}

// Commit is the point of a list from which the run goes on to its end: a
// new desired config no longer stops it, only a shutdown does.
type Commit[D any] struct{}

// Outcome is what a finished step reports in its condition.
type Outcome struct {
	// Reason overrides the condition's default reason.
	Reason  string
	Message string
	// Took, when set, is the step's real duration where it spans more than
	// this run of it (a reboot, from its request to the node back).
	Took time.Duration
	// Complete ends the run after this step: the rest is not needed (an
	// adoption). The rest is recorded as skipped.
	Complete bool
	// WriteNow writes the status as the step ends, before the next step
	// changes it; a failed write is logged, not the step's failure.
	WriteNow bool
	// Settles is the status the step settles besides its own condition.
	// The runner stages it however the step ends (with a failure or an End
	// too: what the step did before it stopped stands), before the step's
	// own condition.
	Settles Settles
}

// Settles is the part of the status a step settles besides its own
// condition and its group's: the one way a step changes the rest of the
// status (the runner stages it, in this order, and writes it).
type Settles struct {
	// Reset puts every condition but Updated and NodeDegraded back to not
	// started and clears the irreconcilable changes of a config refused
	// before: an update begins (status.Stager's ResetForUpdate).
	Reset bool
	// Conditions are other steps' conditions, or primary ones (Updated,
	// NodeDegraded), staged in order.
	Conditions []Condition
	// Desired and Current, when set, are the node's config versions
	// (status.configVersion).
	Desired, Current string
}

// Condition is a status condition as a step settles it.
type Condition struct {
	Type    string
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Also returns s with conditions added after its own.
func (s Settles) Also(c ...Condition) Settles {
	s.Conditions = append(append([]Condition(nil), s.Conditions...), c...)
	return s
}

// StageIn stages s in st: the reset first, then the conditions in order,
// then the config versions. The runner stages a step's Settles so; the
// daemon stages the same values so when it reports outside an update (a
// kept rollback written again after a crash).
func (s Settles) StageIn(st *status.Stager) {
	if s.Reset {
		st.ResetForUpdate()
	}
	for _, c := range s.Conditions {
		st.Set(c.Type, c.Status, c.Reason, c.Message)
	}
	if s.Desired != "" {
		st.SetDesiredVersion(s.Desired)
	}
	if s.Current != "" {
		st.SetCurrentVersion(s.Current)
	}
}

// node is a step as the runner runs it: the list flattened.
type node[D any] struct {
	step   *Step[D]
	group  string
	gates  []Gate[D]
	commit bool
	// sub names the sub-list the step is of ("" for the run's own list).
	sub string
}

// label names the step in the logs, the metrics and the fault points: a
// sub-list's steps by the sub-list too (its "write" is not the update's).
func (n *node[D]) label() string {
	if n.sub == "" {
		return n.step.Name
	}
	return n.sub + "-" + n.step.Name
}

// place is where the flattening is: the group around it, the gates and
// commit point waiting for the next step.
type place[D any] struct {
	group  string
	gates  []Gate[D]
	commit bool
}

func (s Step[D]) flatten(out []node[D], at place[D]) ([]node[D], place[D]) {
	st := s
	out = append(out, node[D]{step: &st, group: at.group, gates: at.gates, commit: at.commit})
	return out, place[D]{group: at.group}
}

func (g Group[D]) flatten(out []node[D], at place[D]) ([]node[D], place[D]) {
	outer := at.group
	at.group = g.Condition
	for _, it := range g.Items {
		out, at = it.flatten(out, at)
	}
	at.group = outer
	return out, at
}

func (g Gate[D]) flatten(out []node[D], at place[D]) ([]node[D], place[D]) {
	at.gates = append(append([]Gate[D](nil), at.gates...), g)
	return out, at
}

func (Commit[D]) flatten(out []node[D], at place[D]) ([]node[D], place[D]) {
	at.commit = true
	return out, at
}

// Steps returns the steps of list in the order they run.
func Steps[D any](list []Item[D]) []Step[D] {
	var out []Step[D]
	for _, n := range flatten(list) {
		out = append(out, *n.step)
	}
	return out
}

// Where says, for each step of list, its group's condition, how many gates
// hold it and whether the list commits before it: for the list's tests.
type Where struct {
	Group  string
	Gates  []string
	Commit bool
}

// Places returns where each step of list is, by step name.
func Places[D any](list []Item[D]) map[string]Where {
	out := map[string]Where{}
	for _, n := range flatten(list) {
		w := Where{Group: n.group, Commit: n.commit}
		for _, g := range n.gates {
			w.Gates = append(w.Gates, g.Name)
		}
		out[n.step.Name] = w
	}
	return out
}

func flatten[D any](list []Item[D]) []node[D] {
	var out []node[D]
	var at place[D]
	for _, it := range list {
		out, at = it.flatten(out, at)
	}
	return out
}

// When returns items when on is set, else nothing: a part of a list that
// only some runs have (the steps that need the cluster).
func When[D any](on bool, items ...Item[D]) []Item[D] {
	if !on {
		return nil
	}
	return items
}

// Insert returns a copy of list with items after the step named after,
// in that step's group (a step added to a list in one line, in a test or a
// variant of the list); list itself is left as it was. It panics when no
// step is named after: a list is code, not input.
func Insert[D any](list []Item[D], after string, items ...Item[D]) []Item[D] {
	out, ok := insert(list, after, items)
	if !ok {
		panic("engine.Insert: no step " + after)
	}
	return out
}

func insert[D any](list []Item[D], after string, items []Item[D]) ([]Item[D], bool) {
	for i, it := range list {
		switch it := it.(type) {
		case Step[D]:
			if it.Name == after {
				return append(append(append([]Item[D](nil), list[:i+1]...), items...), list[i+1:]...), true
			}
		case Group[D]:
			if inner, ok := insert(it.Items, after, items); ok {
				out := append([]Item[D](nil), list...)
				out[i] = Group[D]{Condition: it.Condition, Items: inner}
				return out, true
			}
		}
	}
	return nil, false
}
