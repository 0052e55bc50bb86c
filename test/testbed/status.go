package testbed

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// StatusLog records every MachineConfigNode status the API server stores
// for one node, as a watch sees it.
type StatusLog struct {
	mu    sync.Mutex
	snaps []mcfgv1.MachineConfigNodeStatus
	at    []time.Time // when each snapshot was seen
	seen  chan struct{}
}

// RecordStatus watches node's MachineConfigNode until ctx is done.
func (b *Bed) RecordStatus(ctx context.Context, node string) (*StatusLog, error) {
	w, err := b.MCfg.MachineconfigurationV1().MachineConfigNodes().Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", node).String(),
	})
	if err != nil {
		return nil, err
	}
	l := &StatusLog{seen: make(chan struct{}, 1)}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			mcn := ev.Object.(*mcfgv1.MachineConfigNode)
			l.mu.Lock()
			l.snaps = append(l.snaps, *mcn.Status.DeepCopy())
			l.at = append(l.at, time.Now())
			l.mu.Unlock()
			select {
			case l.seen <- struct{}{}:
			default:
			}
		}
	}()
	return l, nil
}

// FirstStatus returns when the first snapshot with a condition was seen
// (the daemon's first status write; a new MachineConfigNode has none), and
// false before.
func (l *StatusLog) FirstStatus() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, st := range l.snaps {
		if len(st.Conditions) > 0 {
			return l.at[i], true
		}
	}
	return time.Time{}, false
}

// Latest returns the last status seen.
func (l *StatusLog) Latest() mcfgv1.MachineConfigNodeStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.snaps) == 0 {
		return mcfgv1.MachineConfigNodeStatus{}
	}
	return l.snaps[len(l.snaps)-1]
}

// Condition returns the latest condition of a type, or nil.
func (l *StatusLog) Condition(t string) *metav1.Condition {
	st := l.Latest()
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// History returns condition t of every status seen so far, in order
// (statuses without it are left out).
func (l *StatusLog) History(t string) []metav1.Condition {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []metav1.Condition
	for _, st := range l.snaps {
		for _, c := range st.Conditions {
			if c.Type == t {
				out = append(out, c)
			}
		}
	}
	return out
}

// Transitions lists, in the order the watch saw them, every change of a
// condition's status as "Type=Status" (a condition's first appearance
// counts), from snapshot index from on.
func (l *StatusLog) Transitions(from int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	prev := map[string]metav1.ConditionStatus{}
	for i, st := range l.snaps {
		// One write can carry several transitions. Within one write they
		// are listed in the contract's order: a phase's secondary
		// conditions before its primary one turns True, Updated last.
		var held, last []string
		for _, c := range st.Conditions {
			if primary[c.Type] {
				out = append(out, held...)
				held = nil
			}
			old, ok := prev[c.Type]
			prev[c.Type] = c.Status
			if (ok && old == c.Status) || i < from {
				continue
			}
			t := c.Type + "=" + string(c.Status)
			switch {
			case c.Type == "Updated" && c.Status == metav1.ConditionTrue:
				last = append(last, t)
			case primary[c.Type] && c.Status == metav1.ConditionTrue:
				held = append(held, t)
			default:
				out = append(out, t)
			}
		}
		out = append(append(out, held...), last...)
	}
	return out
}

// primary are the contract's primary condition types.
var primary = map[string]bool{"Updated": true, "UpdatePrepared": true, "UpdateExecuted": true,
	"UpdatePostActionComplete": true, "UpdateComplete": true, "Resumed": true}

// Len is the number of statuses seen so far.
func (l *StatusLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.snaps)
}

// WaitFor waits until the latest status has condition t at status s (and,
// if reason is set, that reason).
func (l *StatusLog) WaitFor(ctx context.Context, t, s, reason string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if c := l.Condition(t); c != nil && string(c.Status) == s && (reason == "" || c.Reason == reason) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s=%s: %w; latest:\n%s", t, s, ctx.Err(), l.Describe())
		case <-l.seen:
		case <-tick.C:
		}
	}
}

// WaitStatus waits until a status seen from snapshot index from on
// satisfies match, and returns it.
func (l *StatusLog) WaitStatus(ctx context.Context, from int, match func(mcfgv1.MachineConfigNodeStatus) bool) (mcfgv1.MachineConfigNodeStatus, error) {
	for {
		l.mu.Lock()
		for i := from; i < len(l.snaps); i++ {
			if match(l.snaps[i]) {
				st := l.snaps[i]
				l.mu.Unlock()
				return st, nil
			}
		}
		from = max(from, len(l.snaps))
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return mcfgv1.MachineConfigNodeStatus{}, fmt.Errorf("waiting for a status: %w; latest:\n%s", ctx.Err(), l.Describe())
		case <-l.seen:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Find returns the condition of type t in st, or nil.
func Find(st mcfgv1.MachineConfigNodeStatus, t string) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// Describe prints the latest conditions, one per line.
func (l *StatusLog) Describe() string {
	st := l.Latest()
	var b strings.Builder
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "  %-26s %-7s %-40s %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	if st.ConfigVersion != nil {
		fmt.Fprintf(&b, "  configVersion current=%s desired=%s\n", st.ConfigVersion.Current, st.ConfigVersion.Desired)
	}
	return b.String()
}
