package phases

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Detect is step 1 of the status contract: Updated=False saying from which
// config to which, every other phase condition reset, and the node's state
// annotation Working.
func Detect() Step {
	return Step{
		Name: progress.StepDetect, Show: Show{Quick: true},
		// A status reset since (a MachineConfigNode created again) must not
		// say Cordoned=False either.
		Reload: func(_ context.Context, d Data) (Settles, error) { return cordonHeldSettles(d.Progress()), nil },
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			u := d.Update()
			from := u.CurrentName
			if from == "" {
				from = "no config"
			}
			msg := fmt.Sprintf("Node needs update from %s to %s", from, u.DesiredName)
			if why := d.Progress().RebootRequest; why != "" {
				msg = fmt.Sprintf("Node %s; config %s unchanged", rebootRequestText(why), u.DesiredName)
			}
			// The reset must not say Cordoned=False of a cordon held.
			settles := cordonHeldSettles(d.Progress())
			settles.Reset = true
			settles.Conditions = append([]Condition{condition(status.Updated, metav1.ConditionFalse, status.Updated, msg)},
				settles.Conditions...)
			if err := d.Ports().Cluster.SetNodeState(ctx, "", StateWorking, ""); err != nil {
				return Outcome{Settles: settles}, err
			}
			return Outcome{Message: msg, Settles: settles}, nil
		},
	}
}
