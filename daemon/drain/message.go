package drain

import (
	"github.com/nodeconfd/nodeconfd/phases/plan"

	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// maxBlockers is how many blocking pods a message names; the rest are
// counted.
const maxBlockers = 5

// budgetsFresh is how long the PodDisruptionBudgets read for the progress
// messages are reused: the reads cost a LIST per namespace, made on the
// drain's loop, where eviction results and watch events wait for them.
const budgetsFresh = 15 * time.Second

// budgetList is a namespace's PodDisruptionBudgets as read at a time.
type budgetList struct {
	items []policyv1.PodDisruptionBudget
	at    time.Time
}

// blocker is a pod the drain waits on, and why.
type blocker struct {
	Pod, Why string
}

// progressView is what a progress message says.
type progressView struct {
	Evicted, Total, Terminating int
	Blockers                    []blocker
	// Retrying counts the blockers whose evictions are retried (not the
	// pods stuck terminating, which are only waited for).
	Retrying         int
	Elapsed, Timeout time.Duration
}

// Blocking says what the drain waits on, without the times: the blocking
// pods grouped by cause (groupedBlockers).
func (v progressView) Blocking() string {
	msg := fmt.Sprintf("Evicted %d/%d pods", v.Evicted, v.Total)
	if v.Terminating > 0 {
		msg += fmt.Sprintf(", %d terminating", v.Terminating)
	}
	if len(v.Blockers) == 0 {
		return msg
	}
	return msg + "; waiting on " + groupedBlockers(v.Blockers)
}

// groupedBlockers names the blockers grouped by cause, as Cluster API's
// drain condition does (one budget refusing ten pods is one part, not
// ten): each group names at most maxBlockers pods, at most maxBlockers
// groups are named, in the order of their first pods' names, and the
// pods of the rest are counted. The drain's progress (Blocking) and its
// forecast (WouldBlock) say it alike.
func groupedBlockers(bs []blocker) string {
	groups := groupBlockers(bs)
	var parts []string
	for i, g := range groups {
		if i == maxBlockers {
			rest := 0
			for _, g := range groups[i:] {
				rest += len(g.pods)
			}
			parts = append(parts, fmt.Sprintf("and %d more pods", rest))
			break
		}
		parts = append(parts, g.String())
	}
	return strings.Join(parts, "; ")
}

// blockerGroup is the pods blocked for one reason.
type blockerGroup struct {
	why  string
	pods []string
}

// String names the pods ("pod a", "pods a, b and 3 more") and the reason.
func (g blockerGroup) String() string {
	if len(g.pods) == 1 {
		return "pod " + g.pods[0] + ": " + g.why
	}
	names := g.pods[:min(len(g.pods), maxBlockers)]
	s := "pods " + strings.Join(names, ", ")
	if more := len(g.pods) - len(names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s + ": " + g.why
}

// groupBlockers groups the blockers by reason, pods sorted by name, groups
// by their first pod.
func groupBlockers(bs []blocker) []blockerGroup {
	sorted := append([]blocker(nil), bs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Pod < sorted[j].Pod })
	var groups []blockerGroup
	at := map[string]int{}
	for _, b := range sorted {
		i, ok := at[b.Why]
		if !ok {
			i = len(groups)
			at[b.Why] = i
			groups = append(groups, blockerGroup{why: b.Why})
		}
		groups[i].pods = append(groups[i].pods, b.Pod)
	}
	return groups
}

// String is the progress message: what the drain waits on, since when, and
// against which timeout.
func (v progressView) String() string {
	var when []string
	if v.Retrying > 0 {
		when = append(when, "retrying at most "+retryMax.String()+" apart")
	}
	elapsed := v.Elapsed.Round(time.Second)
	switch {
	case v.Timeout <= 0:
		when = append(when, elapsed.String()+" so far, no timeout")
	case v.Elapsed < v.Timeout:
		when = append(when, fmt.Sprintf("%s of %s", elapsed, v.Timeout))
	default:
		when = append(when, fmt.Sprintf("%s, past the %s drain timeout", elapsed, v.Timeout))
	}
	return v.Blocking() + " (" + strings.Join(when, ", ") + ")"
}

// view sums up the run at now. For pods refused by a disruption budget it
// reads the budgets of their namespaces (one LIST each, reused for
// budgetsFresh) to name them and their allowed disruptions.
func (r *run) view(ctx context.Context, now time.Time) progressView {
	v := progressView{Total: len(r.pods), Elapsed: now.Sub(r.start), Timeout: r.d.Timeout}
	for _, t := range r.pods {
		switch t.state {
		case stateGone:
			v.Evicted++
			continue
		case stateTerminating:
			v.Evicted++
			v.Terminating++
			if why := stuckTerminating(t.pod, now); why != "" {
				v.Blockers = append(v.Blockers, blocker{Pod: podName(t.pod), Why: why})
			}
			continue
		}
		if t.refusal == "" {
			continue
		}
		why := t.refusal
		if t.byBudget {
			if b := budgetsOf(t.pod, r.budgetsIn(ctx, t.pod.Namespace, now)); len(b) > 0 {
				why = describeBudgets(b)
			}
			why += r.surgeNote(t.pod)
		}
		v.Blockers = append(v.Blockers, blocker{Pod: podName(t.pod), Why: why})
		v.Retrying++
	}
	return v
}

// stuckTerminating says how long a pod has been terminating past its grace
// period, or "" when it is within it.
func stuckTerminating(p *corev1.Pod, now time.Time) string {
	if p.DeletionTimestamp == nil {
		return ""
	}
	// deletionTimestamp is when the grace period ends.
	past := now.Sub(p.DeletionTimestamp.Time).Round(time.Second)
	if past < time.Second {
		return ""
	}
	grace := int64(0)
	if p.DeletionGracePeriodSeconds != nil {
		grace = *p.DeletionGracePeriodSeconds
	}
	return fmt.Sprintf("still terminating %s past its %ds grace period", past, grace)
}

// budgetsIn returns a namespace's disruption budgets, read at most every
// budgetsFresh; nil when they cannot be read.
func (r *run) budgetsIn(ctx context.Context, ns string, now time.Time) []policyv1.PodDisruptionBudget {
	if b, ok := r.budgets[ns]; ok && now.Sub(b.at) < budgetsFresh {
		return b.items
	}
	items, err := r.d.listBudgets(ctx, ns)
	if err != nil {
		r.log.Debug("Cannot list disruption budgets", zap.String("namespace", ns), zap.Error(err))
	}
	r.budgets[ns] = budgetList{items: items, at: now}
	return items
}

// budgetsOf picks the budgets that select the pod, as the Eviction API does:
// a budget without a selector selects nothing, an empty one everything.
func budgetsOf(p *corev1.Pod, all []policyv1.PodDisruptionBudget) []policyv1.PodDisruptionBudget {
	var out []policyv1.PodDisruptionBudget
	for _, b := range all {
		if b.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, b)
	}
	return out
}

// describeBudgets says which budgets refuse an eviction and what they
// allow, each expanded as the API server's refusal words it ("needs 3
// healthy, has 3") once the disruption controller has counted its pods.
func describeBudgets(bs []policyv1.PodDisruptionBudget) string {
	var parts []string
	for _, b := range bs {
		s := fmt.Sprintf("PodDisruptionBudget %s allows %s", b.Name, plan.Plural(int(b.Status.DisruptionsAllowed), "disruption"))
		if b.Status.DesiredHealthy > 0 || b.Status.CurrentHealthy > 0 {
			s += fmt.Sprintf(" (needs %d healthy, has %d)", b.Status.DesiredHealthy, b.Status.CurrentHealthy)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
