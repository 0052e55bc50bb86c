package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/oncefrom"
	"github.com/nodeconfd/nodeconfd/daemon/osupdate"
	"github.com/nodeconfd/nodeconfd/daemon/systemd"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// onceHost is the root mount with the removal of state files.
type onceHost struct {
	daemon.Host
}

func (h onceHost) RemoveState(name string) error { return h.FS.RemoveState(name) }

// startOnce is `nodeconfd start --once-from FILE`: the file's config is
// applied with the real host adapters and no API server, then the command
// exits (also once the node is rebooting).
func startOnce(ctx context.Context, o options, policy plan.Policy, log *zap.Logger) error {
	mc, err := readMachineConfig(o.onceFrom)
	if err != nil {
		return fmt.Errorf("--once-from: %w", err)
	}
	// The steps are not cut short by a signal: each is short, and a
	// second run picks up where this one stopped.
	ctx = context.WithoutCancel(ctx)
	host, err := hostfs.Open(o.rootMount)
	if err != nil {
		return fmt.Errorf("opening the root mount: %w", err)
	}
	defer host.Close()
	units, err := systemd.Dial(ctx, o.busAddress)
	if err != nil {
		return fmt.Errorf("connecting to the node's systemd at %s: %w", o.busAddress, err)
	}
	defer units.Close()
	retry := o.pullRetry
	retry.Log = log.Named("osupdate").With(zap.String("node", o.nodeName))
	osu, err := osupdate.Detect(ctx, o.rootMount, osupdate.Chroot{Root: o.rootMount, Timeout: o.osTimeout}, retry)
	if err != nil {
		return fmt.Errorf("detecting the node's OS updater: %w", err)
	}
	log.Info("Detected the OS updater", zap.String("node", o.nodeName), zap.String("updater", osupdate.Name(osu)))
	pool, _ := kube.Pool(nil, nil, o.pool) // no cluster: --pool, else worker
	err = oncefrom.Run(ctx, oncefrom.Options{
		Node: o.nodeName, Config: mc, Host: onceHost{daemon.Host{FS: host, Units: units}}, Units: units, OS: osu,
		Policy: policy, Limits: o.limits, Rule: o.configPattern.For(pool),
		SkipReboot: o.skipReboot, Log: log,
	})
	if errors.Is(err, phases.ErrRebooting) {
		return nil
	}
	return err
}

// onceFromFlags checks --once-from and --skip-reboot; with --once-from the
// node's name defaults to its host name (it is only logged).
func onceFromFlags(o *options) error {
	switch {
	case o.onceFrom == "" && o.skipReboot:
		return errors.New("--skip-reboot needs --once-from")
	case o.onceFrom != "" && o.nodeName == "":
		name, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--node-name: %w", err)
		}
		o.nodeName = name
	}
	return nil
}
