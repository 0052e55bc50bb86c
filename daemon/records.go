package daemon

import (
	"context"
	"errors"
	"fmt"
	"path"
	"syscall"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// A progress record the daemon cannot use (truncated, garbage, another
// schema version) does not stop the daemon: it is reported (NodeDegraded
// with ReasonRecordUnreadable, the state annotation, a Warning Event),
// moved aside, and the daemon goes on from the node's annotations as if
// there had been no record, but without trusting that the node is at its
// currentConfig: see afterLostRecord. The NodeDegraded condition is the
// durable mark of that state; an update or an adoption clears it.

// recordsAsideKept bounds the unreadable progress records kept moved aside.
const recordsAsideKept = 3

// stateDir is the daemon's state folder on the node, for messages.
const stateDir = "/var/lib/nodeconfd"

// asideMover is the part of the host that moves a bad state file aside
// (hostfs.FS).
type asideMover interface {
	MoveStateAside(name, stamp string, keep int) (string, error)
}

// decodeRecord decodes the progress record, or says what is wrong with it.
func decodeRecord(data []byte) (*progress.Record, error) {
	rec, err := progress.Unmarshal(data)
	switch {
	case err != nil:
		return nil, err
	case rec.Desired == "":
		return nil, errors.New("progress record names no desired config")
	}
	return rec, nil
}

// decodeProgress decodes the record read from the node (readErr: the
// read's error); one it cannot use is reported and moved aside, and the
// daemon goes on with no record. A read error other than a folder in the
// record's place (an I/O error, say) is returned, for a retry.
func (d *Daemon) decodeProgress(ctx context.Context, data []byte, readErr error) (*progress.Record, error) {
	var rec *progress.Record
	bad := readErr
	switch {
	case errors.Is(readErr, syscall.EISDIR):
		bad = errors.New("it is a folder")
	case readErr != nil:
		return nil, fmt.Errorf("reading the progress record: %w", readErr)
	default:
		rec, bad = decodeRecord(data)
	}
	if bad == nil {
		return rec, nil
	}
	file := path.Join(stateDir, progress.FileName)
	mover, ok := d.Env.Host.(asideMover)
	if !ok {
		return nil, fmt.Errorf("progress record %s is unreadable (%v) and this host cannot move it aside", file, bad)
	}
	aside, err := mover.MoveStateAside(progress.FileName, d.Now().UTC().Format("20060102T150405Z"), recordsAsideKept)
	if err != nil && aside == "" {
		return nil, fmt.Errorf("progress record %s is unreadable (%v): %w", file, bad, err)
	}
	if err != nil {
		d.Log.Warn("Cannot remove older unreadable progress records", zap.String("node", d.node.Name), zap.Error(err))
	}
	cur, des := d.node.Annotations[names.CurrentConfig], d.node.Annotations[names.DesiredConfig]
	msg := fmt.Sprintf("Error: the progress record %s is unreadable: %v; moved it aside to %s and going on "+
		"from the node's annotations (currentConfig %q, desiredConfig %q)", file, bad, path.Join(stateDir, aside), cur, des)
	d.Log.Error("Progress record unreadable; moved aside", zap.String("node", d.node.Name), zap.String("file", file),
		zap.String("movedTo", path.Join(stateDir, aside)), zap.NamedError("problem", bad))
	d.reportDegraded(ctx, status.ReasonRecordUnreadable, msg)
	return nil, nil
}

// reportDegraded sets NodeDegraded=True with reason and msg, the state
// annotation and a Warning Event; failures to report are logged only (the
// daemon goes on either way).
func (d *Daemon) reportDegraded(ctx context.Context, reason, msg string) {
	phases.ReportDegraded(ctx, d.reporting(), d.Log, phases.Degraded{State: phases.StateDegraded, Reason: reason, Message: msg})
}

// lostRecordPlan decides how a node whose progress record was lost goes
// on: whether it may be adopted at its desired config (when it is not
// known to run another one), and which config an update starts from. An
// update left unfinished may have written part of the desired config,
// or cordoned the node, so the node is not taken to
// be at its currentConfig: a node that is at its desired config in full
// (files, units, OS) is adopted (its cordon, if the daemon's, lifted: see
// phases.Adopt), else it is updated, from currentConfig when that is
// another config (the diff then removes what only it had), else from
// nothing (every file of the desired config written again).
func lostRecordPlan(current, desired string) (tryAdopt bool, from string) {
	if current == "" || current == desired {
		return true, ""
	}
	return false, current
}

// lostRecord starts the record of an update whose progress record was
// lost. A cordon of this daemon on the node (its annotation) is the lost
// update's: the new record holds it, kept until this update's uncordon, so
// that the status says so and the update lifts it (an adoption lifts it at
// once). Without it an update that drains nothing would leave the node
// cordoned for good, its status saying Cordoned=False.
func (d *Daemon) lostRecord(from, to string) *progress.Record {
	rec := progress.New(from, to)
	rec.Cordon.ByUs = d.node.Annotations[names.CordonedBy] != "" && d.node.Spec.Unschedulable
	return rec
}

// startReapply starts the update an administrator's reapply annotation
// asks for: a new record from no config (as lostRecord's), saved before the
// annotation is removed, so that a crash in between resumes the update
// rather than forgetting the request.
func (d *Daemon) startReapply(ctx context.Context, config string) (*progress.Record, error) {
	why := d.node.Annotations[names.Reapply]
	rec := d.lostRecord("", config)
	data, err := rec.Marshal()
	if err == nil {
		err = d.Env.Host.WriteState(progress.FileName, data)
	}
	if err != nil {
		return nil, fmt.Errorf("starting to apply %s again: saving progress: %w", config, err)
	}
	if err := d.API.ClearReapply(ctx, why); err != nil {
		return nil, fmt.Errorf("removing annotation %s: %w", names.Reapply, err)
	}
	d.Log.Info("Applying the node's config again, as the reapply annotation asks", zap.String("node", d.node.Name),
		zap.String("config", config), zap.String("reapply", phases.Truncate(why, 256)))
	if d.events != nil {
		d.events.Event(true, false, "Reapply", fmt.Sprintf("Applying config %s again on node %s (%s=%q)", config,
			d.node.Name, names.Reapply, phases.Truncate(why, 256)))
	}
	return rec, nil
}
