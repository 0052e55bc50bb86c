package daemon

import (
	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases"
)

// appliedFrom is the config an update of a node with no currentConfig
// starts from: the one kept on the node as applied (set up by `start
// --once-from`, or a node registered again), else none (every file of the
// desired config is written; also when the copy cannot be read, which
// the log says).
func (d *Daemon) appliedFrom() (string, error) {
	name, err := phases.AppliedName(d.Env.Host)
	if err != nil {
		d.Log.Warn("Cannot read the config kept on the node; updating it from no config", zap.String("node", d.node.Name),
			zap.Error(err))
		return "", nil
	}
	if name == "" {
		return "", nil
	}
	d.Log.Info("Node has no currentConfig; updating it from the config kept on the node as applied",
		zap.String("node", d.node.Name), zap.String("from", name))
	return name, nil
}
