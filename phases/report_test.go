package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// orderLog records, in order, what a report wrote where.
type orderLog struct {
	calls    []string
	stateErr error
}

func (o *orderLog) SetNodeState(_ context.Context, _, state, _ string) error {
	o.calls = append(o.calls, "state "+state)
	return o.stateErr
}

func (o *orderLog) WriteStatus(_ context.Context, s status.Snapshot) error {
	o.calls = append(o.calls, "status")
	return nil
}

func (o *orderLog) Event(_, _ bool, reason, _ string) { o.calls = append(o.calls, "event "+reason) }

// A report writes the state annotation, then the status, then its Event;
// an annotation the API server refuses holds back neither, and the error
// says what failed.
func TestNodeReportOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stateErr error
		want     string
	}{
		{"written", nil, "state Done,status,event ConfigDriftCleared"},
		{"annotation refused", errors.New("forbidden"), "state Done,status,event ConfigDriftCleared"},
	} {
		o := &orderLog{stateErr: tc.stateErr}
		st := status.NewStager(o, time.Now, status.Snapshot{Conditions: status.Initial(metav1.Now())})
		st.Set(status.Updated, metav1.ConditionTrue, status.ReasonNodeUpgradeComplete, "done")
		err := phases.Reporting{Nodes: o, Status: st, Events: o}.Send(context.Background(), phases.NodeReport{
			State: phases.StateDone, Event: phases.Event{Reason: "ConfigDriftCleared"}})
		if got := strings.Join(o.calls, ","); got != tc.want {
			t.Errorf("%s: wrote %s, want %s", tc.name, got, tc.want)
		}
		if (err != nil) != (tc.stateErr != nil) ||
			(err != nil && !strings.Contains(err.Error(), "writing the node's state annotation: forbidden")) {
			t.Errorf("%s: error %v", tc.name, err)
		}
	}
}
