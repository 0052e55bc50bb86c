package phases_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

type stateLog struct{ calls []string }

func (s *stateLog) SetNodeState(_ context.Context, cur, state, reason string) error {
	s.calls = append(s.calls, state+" "+reason)
	return nil
}

type eventLog struct{ events []string }

func (e *eventLog) Event(onNode, warning bool, reason, message string) {
	if onNode && warning {
		e.events = append(e.events, reason+": "+message)
	}
}

// A degraded node says it three ways, the same text in each: the state
// annotation (its reason cut at 1 KiB), NodeDegraded=True in one status
// write, and a Warning Event on the Node too.
func TestReportDegraded(t *testing.T) {
	nodes, events, w := &stateLog{}, &eventLog{}, &writes{}
	msg := "Error: " + strings.Repeat("x", 2000)
	phases.ReportDegraded(context.Background(), phases.Reporting{Nodes: nodes, Status: stager(w, status.Initial(metav1.Now())),
		Events: events}, zap.NewNop(), phases.Degraded{State: phases.StateUnreconcilable, Reason: "SomethingBroke", Message: msg})
	if len(nodes.calls) != 1 || !strings.HasPrefix(nodes.calls[0], "Unreconcilable Error: xxx") || len(nodes.calls[0]) != len("Unreconcilable ")+1024 {
		t.Errorf("state annotation writes %d, first %.40q (%d bytes)", len(nodes.calls), nodes.calls, len(nodes.calls[0]))
	}
	c := status.Find(w.last, status.NodeDegraded)
	if w.n != 1 || c == nil || c.Status != metav1.ConditionTrue || c.Reason != "SomethingBroke" || c.Message != msg {
		t.Errorf("%d status writes, NodeDegraded %+v", w.n, c)
	}
	if len(events.events) != 1 || events.events[0] != "SomethingBroke: "+msg {
		t.Errorf("Warning Events on the node: %d", len(events.events))
	}
}
