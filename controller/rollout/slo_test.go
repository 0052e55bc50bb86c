package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestParseSLOs(t *testing.T) {
	slos, err := ParseSLOs("# error budget\nsum(rate(http_errors_total[1m])) < 5\n\n  avg(up{job=\"web\"}) >= 0.9  \n")
	if err != nil {
		t.Fatal(err)
	}
	if len(slos) != 2 || slos[0].Expr != "sum(rate(http_errors_total[1m]))" || slos[0].Op != "<" || slos[0].Threshold != 5 ||
		slos[1].Expr != `avg(up{job="web"})` || slos[1].Op != ">=" || slos[1].Threshold != 0.9 {
		t.Fatalf("%+v", slos)
	}
	if !slos[0].Holds(4.9) || slos[0].Holds(5) || !slos[1].Holds(0.9) || slos[1].Holds(0.89) {
		t.Error("Holds")
	}
	for _, bad := range []string{"up", "up == 1", "up < x", "< 5"} {
		if _, err := ParseSLOs(bad); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v, want an error naming line 1", bad, err)
		}
	}
}

// While a node soaks, a breach stops the rollout and hands the node the
// previous config (unless the pool says stop); the pool's status keeps
// the breach, which stops the rollout without asking again; a Prometheus
// that cannot be asked holds it.
func TestNextSLO(t *testing.T) {
	T := corev1.ConditionTrue
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	nodes := func() []*corev1.Node {
		return []*corev1.Node{mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v0, v0, ready(T)),
			mkNode("node-2", v0, v0, ready(T))}
	}
	in := func() Input {
		return Input{Pool: withMax(mkPool("worker", ""), intstr.FromInt32(1)), Target: v1, Nodes: nodes(), Now: now,
			Soak: time.Minute, MCNs: map[string]*mcfgv1.MachineConfigNode{"node-0": mkMCN("node-0", v1, now.Add(-10*time.Second), "")},
			Previous: v0, BreachAction: BreachRollback}
	}
	if node, end := Soaking(in()); node != "node-0" || !end.Equal(now.Add(50*time.Second)) {
		t.Errorf("soaking %s until %s", node, end)
	}
	b := &Breach{Config: v1, Node: "node-0", SLO: "errors < 5", Value: 12}
	i := in()
	i.Breach = b
	d := Next(i)
	if len(d.Hand) != 0 || !slices.Equal(d.Rollback, []string{"node-0"}) || !strings.Contains(d.Waiting, "broke the SLO \"errors < 5\" during node node-0's soak (value 12)") {
		t.Errorf("breach: %+v", d)
	}
	st := Status(i, nil)
	c := findCondition(st.Conditions, SLOBreached)
	if c == nil || c.Status != T || c.Reason != v1 {
		t.Fatalf("status keeps no breach: %+v", st.Conditions)
	}
	i.BreachAction = BreachStop
	if d := Next(i); len(d.Rollback) != 0 || len(d.Hand) != 0 {
		t.Errorf("stop: %+v", d)
	}
	// Kept in the status: the rollout stays stopped, nothing asked or rolled back again.
	i = in()
	i.Pool.Status = st
	if d := Next(i); len(d.Hand) != 0 || len(d.Rollback) != 0 || !strings.Contains(d.Waiting, "broke the SLO") {
		t.Errorf("kept breach: %+v", d)
	}
	// A new config clears it.
	i.Target = v2
	if st := Status(i, nil); findCondition(st.Conditions, SLOBreached).Status != corev1.ConditionFalse {
		t.Errorf("a new config keeps the breach: %+v", st.Conditions)
	}
	i = in()
	i.SLOHold = "cannot ask Prometheus"
	if d := Next(i); len(d.Hand) != 0 || d.Waiting != "cannot ask Prometheus" || d.RequeueAfter != SLOEvery {
		t.Errorf("hold: %+v", d)
	}
}

func findCondition(cs []mcfgv1.MachineConfigPoolCondition, t mcfgv1.MachineConfigPoolConditionType) *mcfgv1.MachineConfigPoolCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}
