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
		Reload: func(_ context.Context, d Data) error { sayCordonHeld(d); return nil },
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
			d.Stager().ResetForUpdate()
			d.Stager().SetIrreconcilableChanges(nil) // they described the config refused before
			d.SetCondition(status.Updated, metav1.ConditionFalse, status.Updated, msg)
			sayCordonHeld(d) // the reset must not say Cordoned=False
			if err := d.Ports().Cluster.SetNodeState(ctx, "", StateWorking, ""); err != nil {
				return Outcome{}, err
			}
			return Outcome{Message: msg}, nil
		},
	}
}
