package rollout

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nodeconfd/nodeconfd/names"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
)

// The SLO gate (issue 30): while a node soaks on the pool's config (from
// its finish to the end of the pool's soak time), the pool's service-level
// queries must hold; a query that breaks marks the config failed for the
// pool, as the health gate does on a node: the rollout stops, and the node
// goes back to the pool's previous config unless the pool says to only
// stop. The controller asks Prometheus (package controller); these are the
// pure parts: the queries, the soaking node, the decision.

// SLOBreached is the pool condition that keeps a breach: True, its reason
// the config that broke it, until the pool's config changes.
const SLOBreached mcfgv1.MachineConfigPoolConditionType = "SLOBreached"

// Breach actions (the pool's nodeconfd.io/slo-breach-action).
const (
	BreachRollback = "rollback"
	BreachStop     = "stop"
)

// SLO is one query the pool must keep: Expr's every sample Op Threshold.
type SLO struct {
	Text, Expr, Op string
	Threshold      float64
}

// ParseSLOs reads the pool's queries, one a line: a PromQL expression, a
// comparison (<, <=, >, >=) and a number, e.g.
// "sum(rate(http_errors_total[1m])) < 5". Blank lines and lines starting
// with # are skipped.
func ParseSLOs(text string) ([]SLO, error) {
	var out []SLO
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSLO(line)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", i+1, line, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseSLO(line string) (SLO, error) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return SLO{}, fmt.Errorf("want EXPRESSION OP NUMBER (OP one of <, <=, >, >=)")
	}
	op, num := f[len(f)-2], f[len(f)-1]
	switch op {
	case "<", "<=", ">", ">=":
	default:
		return SLO{}, fmt.Errorf("%q is not one of <, <=, >, >=", op)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return SLO{}, fmt.Errorf("%q is not a number", num)
	}
	expr := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(line, num)), op))
	return SLO{Text: line, Expr: expr, Op: op, Threshold: v}, nil
}

// Holds reports whether v keeps the SLO.
func (s SLO) Holds(v float64) bool {
	switch s.Op {
	case "<":
		return v < s.Threshold
	case "<=":
		return v <= s.Threshold
	case ">":
		return v > s.Threshold
	}
	return v >= s.Threshold
}

// Breach is an SLO broken while a node soaked on Config.
type Breach struct {
	Config, Node, SLO string
	Value             float64
}

func (b Breach) String() string {
	return fmt.Sprintf("%s broke the SLO %q during node %s's soak (value %g)", b.Config, b.SLO, b.Node, b.Value)
}

// BreachOf is the breach the pool's status keeps for target, "" when it
// keeps none (or one of another config: the pool's config changed).
func BreachOf(pool *mcfgv1.MachineConfigPool, target string) string {
	for _, c := range pool.Status.Conditions {
		if c.Type == SLOBreached && c.Status == corev1.ConditionTrue && c.Reason == target {
			return c.Message
		}
	}
	return ""
}

// Soaking is the node soaking on Target now, the last to finish it, and
// the end of its soak; "" when none is (no soak time, or it is over).
func Soaking(in Input) (string, time.Time) {
	if in.Soak <= 0 {
		return "", time.Time{}
	}
	var node string
	var last time.Time
	for _, n := range in.Nodes {
		if t, ok := finishedAt(n, in.MCNs[n.Name], in.Target, in.Now); ok && t.After(last) {
			node, last = n.Name, t
		}
	}
	end := last.Add(in.Soak)
	if node == "" || !in.Now.Before(end) {
		return "", time.Time{}
	}
	return node, end
}

// sloDecision stops the rollout for a breach of Target: nothing handed,
// nothing granted, and the node that broke it handed the previous config
// when the pool says rollback (and there is one).
func sloDecision(in Input) (Decision, bool) {
	msg := in.SLOHold
	if in.Breach != nil && in.Breach.Config == in.Target {
		msg = in.Breach.String() + "; the rollout stops until the pool's config changes"
	} else if stored := BreachOf(in.Pool, in.Target); stored != "" {
		msg = stored + "; the rollout stops until the pool's config changes"
	}
	if msg == "" {
		return Decision{}, false
	}
	d := Decision{Waiting: msg}
	if in.SLOHold != "" && in.Breach == nil {
		d.RequeueAfter = SLOEvery
		return d, true
	}
	if in.Breach != nil && in.BreachAction != BreachStop && in.Previous != "" && in.Previous != in.Target {
		for _, n := range in.Nodes {
			if n.Name == in.Breach.Node && n.Annotations[names.DesiredConfig] == in.Target {
				d.Rollback = append(d.Rollback, n.Name)
			}
		}
	}
	return d, true
}

// SLOEvery is how often the queries are asked while a node soaks.
const SLOEvery = 10 * time.Second
