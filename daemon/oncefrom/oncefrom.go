// Package oncefrom applies one rendered MachineConfig from a file with no
// API server (`nodeconfd start --once-from FILE`): a first boot, or a node
// that cannot reach its cluster. It runs the update's own phases (prepare,
// write, the post action, validate, finish) with the real host adapters,
// minus what needs a cluster: there is no cordon, drain or uncordon, and the
// status, Events and node annotations are logged instead of written. The
// config is then kept on the node as the one it runs (applied-config.json)
// and no progress record is left, so the daemon started later against a
// cluster adopts the config without rewriting anything.
package oncefrom

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Host is the node's filesystem as the phases see it, and the removal of
// the progress record once the config is applied.
type Host interface {
	phases.Host
	RemoveState(name string) error
}

// Options is one run.
type Options struct {
	// Node names the node in the logs.
	Node string
	// Config is the rendered MachineConfig to apply.
	Config *mcfgv1.MachineConfig
	Host   Host
	Units  phases.Units
	// OS is nil when the node has no OS updater.
	OS     phases.OSUpdater
	Policy plan.Policy
	Limits plan.Limits
	// Rule is the desired config names the node accepts.
	Rule plan.ConfigRule
	// SkipReboot leaves a change that needs a reboot to the next boot.
	SkipReboot bool
	Log        *zap.Logger
	Now        func() time.Time
}

// Run applies o.Config. It returns phases.ErrRebooting once the node is
// rebooting: run it again after the boot (from a unit that runs until it
// succeeds) and it finishes the update. A refused config returns prepare's
// error, with nothing written.
func Run(ctx context.Context, o Options) error {
	if o.Now == nil {
		o.Now = time.Now
	}
	log := o.Log.With(zap.String("node", o.Node))
	// The name goes into the progress record and the kept copy, and the
	// daemon later asks the API server for it: one that is not a
	// Kubernetes name could never be fetched or replaced there, so it is
	// refused before anything is read or written.
	if errs := validation.IsDNS1123Subdomain(o.Config.Name); len(errs) > 0 {
		return &plan.ConfigError{Object: o.Config.Name, Field: "metadata.name",
			Msg: "not a Kubernetes object name: " + strings.Join(errs, "; ")}
	}
	rec, resuming, err := record(o.Host, o.Config.Name)
	if err != nil {
		return err
	}
	// As the daemon does at every pass: a journal no update owns (a run
	// killed mid-write, then a record lost) is rolled back or dropped.
	done, err := phases.CleanLeftovers(o.Host, rec)
	for _, l := range done {
		log.Info(l.Message, zap.String("journal", l.ID), zap.Bool("warning", l.Warning))
	}
	if err != nil {
		return fmt.Errorf("cleaning up leftover journals: %w", err)
	}
	log.Info("Applying a MachineConfig from a file, with no API server: no cordon or drain (there is no cluster), "+
		"status and Events are logged only", zap.String("config", o.Config.Name), zap.String("from", rec.Current),
		zap.Bool("resuming", resuming), zap.Bool("skipReboot", o.SkipReboot))
	r := &phases.Runner{
		Env: phases.Env{Ports: phases.Ports{Configs: configs{o.Config}, Cluster: noCluster{log}, Host: o.Host, Units: o.Units,
			OS: o.OS, Policy: o.Policy, Limits: o.Limits, ConfigRule: o.Rule}},
		Status: status.NewStager(statusLog{log}, o.Now, status.Snapshot{}), Events: eventLog{log}, Log: log, Now: o.Now,
		Phases: phases.OnceFrom(o.SkipReboot), Record: rec, Node: o.Node,
	}
	switch err := r.Run(ctx); {
	case errors.Is(err, phases.ErrRebooting):
		log.Info("Node is rebooting; run the same command after the boot to finish the update")
		return err
	case err != nil:
		r.Fail(ctx, err)
		if !rec.Write.Started {
			// Refused, or failed before its first write: nothing of it is
			// on the node, so no record of it stays either.
			if rerr := o.Host.RemoveState(progress.FileName); rerr != nil {
				log.Error("Cannot remove the progress record", zap.Error(rerr))
			}
		}
		return err
	}
	// No record stays: the daemon adopts a node with none whose files
	// match its desired config, and keeps them as they are.
	if err := o.Host.RemoveState(progress.FileName); err != nil {
		return err
	}
	log.Info("Applied the MachineConfig and kept it on the node as the config it runs", zap.String("config", o.Config.Name),
		zap.String("state", phases.AppliedFileName))
	return nil
}

// record returns the progress record to run: the unfinished one of this
// config (after a reboot, or a crash), else a new one from the config the
// node runs (the copy kept on the node), if any. An unfinished update to
// another config that has begun to write is refused: it has to be
// finished first.
func record(host Host, desired string) (rec *progress.Record, resuming bool, err error) {
	data, err := host.ReadState(progress.FileName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, false, err
	default:
		if rec, err = progress.Unmarshal(data); err != nil {
			return nil, false, fmt.Errorf("reading the progress record %s: %w", progress.FileName, err)
		}
		if !rec.Done(progress.StepResume) && (rec.Write.Started || rec.Desired == desired) {
			if rec.Desired != desired {
				return nil, false, fmt.Errorf("an update to MachineConfig %q is unfinished on this node (%s): "+
					"finish it first (the same command with its file, or the daemon)", rec.Desired, progress.FileName)
			}
			return rec, true, nil
		}
	}
	current, err := phases.AppliedName(host)
	if err != nil {
		return nil, false, err
	}
	return progress.New(current, desired), false, nil
}
