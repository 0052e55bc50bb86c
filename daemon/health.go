package daemon

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// afterRollback keeps a node whose update the health gate rolled back on its
// previous config (phases.Health, phases.ErrRolledBack). It reports kept when the
// pass is over:
//   - the record's update was rolled back and the desired config is still
//     the failed one: nothing is done, unless the administrator's retry
//     annotation has a new value; the failed config is then tried again
//     from a new record (which remembers that value);
//   - a rollback is under way while the desired config changed: the
//     rollback runs to its end first (the new config then starts from the
//     previous config, on an uncordoned node).
//
// It returns the record the pass goes on with.
func (d *Daemon) afterRollback(ctx context.Context, rec *progress.Record, current, desired string) (*progress.Record, bool, error) {
	if rec == nil || rec.Health == nil || rec.Done(progress.StepResume) {
		return rec, false, nil
	}
	h := rec.Health
	log := d.Log.With(zap.String("node", d.node.Name), zap.String("config", rec.Desired))
	switch {
	case !h.Kept && h.Failed != "" && rec.Desired != desired:
		log.Info("Desired config changed during the health gate's rollback; finishing the rollback first",
			zap.String("desired", desired))
		return rec, true, d.update(ctx, rec, current, rec.Desired)
	case !h.Kept || rec.Desired != desired:
		return rec, false, nil
	}
	retry := d.node.Annotations[kube.RetryFailedConfig]
	if retry == "" || retry == h.Retry {
		if d.keptOn != desired {
			d.keptOn = desired
			log.Info("Keeping the previous config: the desired config failed the health gate", zap.String("running", rec.Current),
				zap.String("failed", h.Failed))
		}
		return rec, true, nil
	}
	d.keptOn = ""
	n := progress.New(rec.Current, desired)
	n.EarlierKernelArgs = rec.EarlierKernelArgs
	n.Health = &progress.Health{Retry: retry}
	data, err := n.Marshal()
	if err == nil {
		err = d.Env.Host.WriteState(progress.FileName, data)
	}
	if err != nil {
		return rec, true, fmt.Errorf("starting the retry of %s: saving progress: %w", desired, err)
	}
	log.Info("Retrying the config that failed the health gate, as the retry annotation asks", zap.String("retry", retry))
	if d.events != nil {
		d.events.Event(true, false, "HealthGateRetry", fmt.Sprintf("Retrying config %s on node %s (%s=%s)", desired,
			d.node.Name, kube.RetryFailedConfig, retry))
	}
	return n, false, nil
}
