package daemon

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// A node whose update the health gate rolled back (phases.Health,
// phases.ErrRolledBack) keeps its previous config while the desired config
// is still the failed one (decidePass: passKept), unless the
// administrator's retry annotation has a new value: the failed config is
// then tried again from a new record, which remembers that value
// (passRetry). A rollback under way when the desired config changes runs
// to its end first.

// keep reports, once per failed config, that the node keeps its previous
// config: one log line, and the status the rollback settled
// (phases.KeptStatus) staged again and written if it differs, so that a
// crash or a failed write between the record's Kept and the status write
// never leaves a status that says the update is still under way. After a
// rollback that wrote its status, it stages nothing new and writes nothing.
func (d *Daemon) keep(ctx context.Context, rec *progress.Record) error {
	if d.keptOn == rec.Desired {
		return nil
	}
	phases.KeptStatus(rec).StageIn(d.status)
	if err := d.reporting().Send(ctx, phases.NodeReport{}); err != nil {
		return fmt.Errorf("reporting that node %s keeps %s after %s failed the health gate: %w", d.node.Name,
			rec.Current, rec.Desired, err)
	}
	d.keptOn = rec.Desired
	d.Log.Info("Keeping the previous config: the desired config failed the health gate", zap.String("node", d.node.Name),
		zap.String("config", rec.Desired), zap.String("running", rec.Current), zap.String("failed", rec.Health.Failed))
	return nil
}

// startRetry saves the record of a new try of the failed config desired,
// as the retry annotation asks, and returns it.
func (d *Daemon) startRetry(rec *progress.Record, desired string) (*progress.Record, error) {
	d.keptOn = ""
	retry := d.node.Annotations[names.RetryFailedConfig]
	n := progress.New(rec.Current, desired)
	n.Inherited.EarlierKernelArgs = rec.Inherited.EarlierKernelArgs
	n.Health = &progress.Health{Retry: retry}
	data, err := n.Marshal()
	if err == nil {
		err = d.Env.Host.WriteState(progress.FileName, data)
	}
	if err != nil {
		return nil, fmt.Errorf("starting the retry of %s: saving progress: %w", desired, err)
	}
	d.Log.Info("Retrying the config that failed the health gate, as the retry annotation asks",
		zap.String("node", d.node.Name), zap.String("config", desired), zap.String("retry", retry))
	if d.events != nil {
		d.events.Event(true, false, "HealthGateRetry", fmt.Sprintf("Retrying config %s on node %s (%s=%s)", desired,
			d.node.Name, names.RetryFailedConfig, retry))
	}
	return n, nil
}
