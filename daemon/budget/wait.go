package budget

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nodeconfd/nodeconfd/phases"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// waitLocked loops until the node holds a slot. It lists the budget's
// Leases and places the node in the queue (see queue.go): in its head it
// follows all the Leases with one watch (waitHead); behind it, it watches
// only the entry headSize places ahead (waitBehind) and, when that goes,
// lists again to find its new place.
func (b *Budget) waitLocked(ctx context.Context, log *zap.Logger, report func(string)) error {
	q := &queueEntry{b: b}
	defer q.leave(ctx, log)
	slots, err := b.queueUnlessFree(ctx, q)
	if err != nil {
		return err
	}
	rep := reporter{report: report, log: log, slots: b.cfg.Slots}
	st := &standing{dead: expiries{}, turns: newTurns(b.cfg.Holder, b.cfg.TurnGrace,
		entryRenewal(b.cfg.EntryDuration))}
	v := &view{slots: slots}
	for {
		if v.found == nil {
			if err := b.look(ctx, q, v, st.dead); err != nil {
				return err
			}
		}
		q.saw(v.found)
		now := time.Now()
		slots := observations{}.slots(b.cfg.Name, b.cfg.Slots, v.found, b.cfg.Duration, now)
		queue := st.dead.live(waitersOf(v.found, b.cfg.EntryDuration, b.cfg.ClockSkew), b.cfg.Holder, now)
		pl := placeOf(queue, b.cfg.Holder, headSize(b.cfg.Slots))
		if c := decide(b.cfg.Holder, slots, queue, now); pl.Head || c.Action != Wait {
			if v.partial { // an entry ahead lapsed since look: the head needs a whole view
				*v = view{rv: v.rv}
				continue
			}
			if err := b.waitHead(ctx, log, q, &rep, v, st); !errors.Is(err, errPlace) {
				return err
			}
			continue
		}
		if err := q.join(ctx); err != nil {
			return err
		}
		b.synced = true // the list showed no slot of this node
		c := waitChoice(slots)
		c.Ahead, c.AheadAtLeast = pl.Ahead, v.partial
		rep.waiting(c, now, soakNote(v.found, now))
		// Only the entry watched is kept while waiting behind: a list of
		// the whole queue held by every waiter would cost memory growing
		// with the square of the queue's length across a fleet.
		target, rv := v.found[pl.Watch].DeepCopy(), v.rv
		*v = view{}
		rv, err := b.waitBehind(ctx, q, target, pl.Next, rv, &st.watched, st.dead)
		if err != nil {
			return err
		}
		*v = view{rv: rv, near: true}
	}
}

// standing is what a waiter learns of the queue while it waits: the
// entries it saw expire, the turns it saw lapse, the entry it watches.
type standing struct {
	dead    expiries
	turns   *turns
	watched watched
}

// view is the budget's Leases as listed (or followed) at version rv.
type view struct {
	found map[string]*coordinationv1.Lease
	rv    string
	// partial: found holds only the newest queue entries (listRecent),
	// which put the node behind the head.
	partial bool
	// slots are the slots as last read, for a node that has just queued
	// and lists only the newest entries next (look).
	slots map[string]*coordinationv1.Lease
	// near: the entry the node watched went, so it lists only what is
	// ahead of it next (look).
	near bool
}

// errPlace ends waitHead for a node that must find its place in the queue
// again: it finds itself behind the head (it started with the queue short,
// and many queued meanwhile), or it just queued after a lost race (many
// newcomers raced for a few free slots, and the losers line up: each lists
// once with its own entry in it, rather than all following all).
var errPlace = errors.New("finding the node's place in the disruption queue")

// waitHead waits in the head of the queue, from the Leases of v: it
// follows them with one watch; each time they change it does what decide
// says: take the slot that is its turn, or wait for the next change or the
// first expiry. A node that finds itself behind the head once its entry
// shows returns errPlace, with v as it followed it.
func (b *Budget) waitHead(ctx context.Context, log *zap.Logger, q *queueEntry, rep *reporter, v *view, st *standing) error {
	cache := b.followLeases(v.found, v.rv)
	defer cache.stop()
	obs, t := observations{}, st.turns
	races := 0
	for {
		q.saw(cache.items)
		if until := q.unseen(cache.items); !until.IsZero() {
			if err := cache.next(ctx, until); err != nil {
				return err
			}
			continue
		}
		now := time.Now()
		slots := obs.slots(b.cfg.Name, b.cfg.Slots, cache.items, b.cfg.Duration, now)
		free := freeSlots(slots, now)
		all := st.dead.live(waitersOf(cache.items, b.cfg.EntryDuration, b.cfg.ClockSkew), b.cfg.Holder, now)
		queue, turnEnds := t.live(all, free, now)
		if len(queue) < len(all) {
			log.Debug("Skipping waiters whose turn lapsed", zap.Int("skipped", len(all)-len(queue)))
		}
		c := decide(b.cfg.Holder, slots, queue, now)
		b.noteSynced(c)
		if c.Action == Wait && !placeOf(all, b.cfg.Holder, headSize(b.cfg.Slots)).Head {
			*v = view{found: cache.items, rv: cache.rv}
			return errPlace
		}
		if c.Action == Wait {
			if err := q.keep(ctx, now); err != nil {
				return err
			}
			rep.waiting(c, now, soakNote(cache.items, now))
			if err := cache.next(ctx, earliest(earliest(earliest(c.Until, turnEnds), rep.due()), q.renewDue())); err != nil {
				return err
			}
			continue
		}
		l, err := b.take(ctx, c, cache.items)
		if lost(err) {
			if l != nil {
				cache.items[l.Name] = l // the slot as it is (a create found it taken)
			}
			races++
			log.Debug("Lost a race for a disruption slot", zap.String("lease", SlotName(b.cfg.Name, c.Slot)),
				zap.Stringer("action", c.Action), zap.Bool("queued", q.in), zap.Int("free", free), zap.Int("queue", len(queue)), zap.Error(err))
			if !q.in && !q.foreign {
				if err := q.join(ctx); err != nil {
					return err
				}
				*v = view{rv: cache.rv, slots: slotsOf(cache.items)}
				return errPlace
			}
			if err := afterLostRace(ctx, q, cache, races); err != nil {
				return err
			}
			continue
		}
		if c.Action == TakeOver && apierrors.IsForbidden(err) {
			// The admission policy lets a slot be taken over only once its
			// renewTime plus duration has passed on this node's clock too:
			// a clock behind the holder's waits for it.
			log.Warn("Taking over an expired disruption slot was refused; retrying", zap.Error(err),
				zap.Duration("retryIn", takeOverRetry))
			if err := phases.Sleep(ctx, takeOverRetry); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		b.hold(ctx, c, cache.items, l, now)
		return nil
	}
}

// afterLostRace follows a race lost to another daemon that changed the slot
// first (a waiter ahead that this daemon skipped, or a newcomer): the node
// queues up, or makes sure the others see it alive again, and looks again
// after a short pause.
func afterLostRace(ctx context.Context, q *queueEntry, cache *leases, races int) error {
	if err := q.rejoin(ctx); err != nil {
		return err
	}
	if err := phases.Sleep(ctx, raceBackoff(races)); err != nil {
		return err
	}
	return cache.next(ctx, time.Now().Add(10*time.Millisecond))
}

// take does what the choice c says to slot c.Slot.
func (b *Budget) take(ctx context.Context, c Choice, found map[string]*coordinationv1.Lease) (*coordinationv1.Lease, error) {
	name := SlotName(b.cfg.Name, c.Slot)
	switch c.Action {
	case Adopt:
		return b.write(ctx, found[name], false)
	case Create:
		return b.create(ctx, name)
	case TakeOver:
		return b.write(ctx, found[name], true)
	}
	return nil, fmt.Errorf("disruption budget %s: nothing to take (%s)", b.cfg.Name, c.Action)
}

// hold records the slot taken.
func (b *Budget) hold(ctx context.Context, c Choice, found map[string]*coordinationv1.Lease, l *coordinationv1.Lease, now time.Time) {
	prev := ""
	if old := found[l.Name]; old != nil {
		prev = holderOf(old)
	}
	b.held, b.renewed, b.synced = l, now, true
	b.logger(ctx).Info("Holding disruption slot", zap.String("lease", l.Name), zap.Stringer("how", c.Action),
		zap.String("previousHolder", prev))
}

// noteSynced records that the list behind c showed no slot of this node,
// so Release need not look for one; when it did show one (c adopts it), only
// a successful take (hold) says the budget knows the node's slot again.
func (b *Budget) noteSynced(c Choice) {
	if c.Action != Adopt {
		b.synced = true
	}
}

// takeOverRetry is the pause after the admission policy refused a takeover.
const takeOverRetry = 5 * time.Second

// lost reports whether a take failed because another daemon changed the
// slot first.
func lost(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }

// raceBackoff is the pause after the n-th race lost in a row: 50ms
// doubling up to 1s, with jitter so that the losers do not race again in
// step.
func raceBackoff(n int) time.Duration {
	d := min(50*time.Millisecond<<min(n-1, 5), time.Second)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)))
}

// earliest is the earlier of a and b, a zero time counting as none.
func earliest(a, b time.Time) time.Time {
	if b.IsZero() {
		return a
	}
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// list reads the budget's slots (not its queue, which may be long) by
// name, with the list's resourceVersion.
func (b *Budget) list(ctx context.Context) (map[string]*coordinationv1.Lease, string, error) {
	return b.listWith(ctx, metav1.ListOptions{LabelSelector: labels.Set{Label: b.cfg.Name}.String() + ",!" + RoleLabel})
}

// listWith reads the budget's Leases that opts select, by name, with the
// list's resourceVersion.
func (b *Budget) listWith(ctx context.Context, opts metav1.ListOptions) (map[string]*coordinationv1.Lease, string, error) {
	list, err := b.cfg.Client.Leases(b.cfg.Namespace).List(ctx, opts)
	if err != nil {
		return nil, "", fmt.Errorf("listing the Leases of disruption budget %s in namespace %s: %w", b.cfg.Name, b.cfg.Namespace, err)
	}
	found := make(map[string]*coordinationv1.Lease, len(list.Items))
	for i := range list.Items {
		found[list.Items[i].Name] = &list.Items[i]
	}
	return found, list.ResourceVersion, nil
}

// create takes a slot whose Lease does not exist.
func (b *Budget) create(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	now := metav1.NewMicroTime(time.Now())
	holder := b.cfg.Holder
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.cfg.Namespace, Labels: map[string]string{Label: b.cfg.Name}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: b.seconds(),
			AcquireTime: &now, RenewTime: &now},
	}
	leases := b.cfg.Client.Leases(b.cfg.Namespace)
	created, err := leases.Create(ctx, l, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Another daemon created it first, or a Lease of that name exists
		// without the budget's label (the list does not show it): that one
		// would make every daemon retry for ever, so it is an error.
		cur, gerr := leases.Get(ctx, name, metav1.GetOptions{})
		if gerr == nil && cur.Labels[Label] != b.cfg.Name {
			return nil, fmt.Errorf("Lease %s/%s exists without label %s=%s, so it is not a slot of disruption budget %s: "+
				"delete it, or choose another --disruption-budget", b.cfg.Namespace, name, Label, b.cfg.Name, b.cfg.Name)
		}
		if gerr == nil {
			return cur, err // the slot as it is, for a view that did not show it
		}
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("creating Lease %s/%s: %w", b.cfg.Namespace, name, err)
	}
	return created, nil
}

// write updates a slot's Lease, as read, to this node: a renewal of the
// node's own slot, or (takeOver) the taking of a released or expired one.
// The update carries the resourceVersion read, so a conflict means someone
// else changed the Lease first.
func (b *Budget) write(ctx context.Context, l *coordinationv1.Lease, takeOver bool) (*coordinationv1.Lease, error) {
	l = l.DeepCopy()
	now := metav1.NewMicroTime(time.Now())
	holder := b.cfg.Holder
	l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &holder, &now, b.seconds()
	if takeOver {
		l.Spec.AcquireTime = &now
		n := int32(1)
		if l.Spec.LeaseTransitions != nil {
			n = *l.Spec.LeaseTransitions + 1
		}
		l.Spec.LeaseTransitions = &n
	}
	updated, err := b.cfg.Client.Leases(b.cfg.Namespace).Update(ctx, l, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsConflict(err) {
		return nil, fmt.Errorf("updating Lease %s/%s: %w", b.cfg.Namespace, l.Name, err)
	}
	return updated, err
}
