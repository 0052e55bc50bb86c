package oncefrom

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// configs serves the one config of the file.
type configs struct{ mc *mcfgv1.MachineConfig }

func (c configs) MachineConfig(_ context.Context, name string) (*mcfgv1.MachineConfig, error) {
	if name != c.mc.Name {
		return nil, fmt.Errorf("there is no API server: only MachineConfig %q (from the file) is known", c.mc.Name)
	}
	return c.mc, nil
}

// noCluster is the Cluster of a node with no API server: there is no node
// to cordon or drain, and no annotation to write.
type noCluster struct{ log *zap.Logger }

func (c noCluster) Cordon(context.Context) (bool, error) {
	c.log.Info("No cluster: not cordoning")
	return false, nil
}

func (c noCluster) Uncordon(context.Context) error { return nil }

func (c noCluster) CheckDrain(context.Context) error  { return nil }
func (c noCluster) Steer(context.Context, bool) error { return nil }

func (c noCluster) Drain(context.Context, phases.DrainProgress) (phases.DrainResult, error) {
	c.log.Info("No cluster: not draining")
	return phases.DrainResult{}, nil
}

func (c noCluster) SetNodeState(_ context.Context, currentConfig, state, reason string) error {
	c.log.Info("No cluster: the node's annotations are not written", zap.String("currentConfig", currentConfig),
		zap.String("state", state), zap.String("reason", reason))
	return nil
}

// statusLog logs the MachineConfigNode status changes the update would
// write.
type statusLog struct{ log *zap.Logger }

func (s statusLog) WriteStatus(_ context.Context, st status.Snapshot) error {
	for _, c := range st.Conditions {
		s.log.Debug("Status", zap.String("condition", c.Type), zap.String("status", string(c.Status)),
			zap.String("reason", c.Reason), zap.String("message", c.Message))
	}
	return nil
}

// eventLog logs the Events the update would record.
type eventLog struct{ log *zap.Logger }

func (e eventLog) Event(_, warning bool, reason, message string) {
	if warning {
		e.log.Warn("Event", zap.String("reason", reason), zap.String("message", message))
		return
	}
	e.log.Info("Event", zap.String("reason", reason), zap.String("message", message))
}
