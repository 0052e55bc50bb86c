package testbed

import (
	"context"
	"testing"
	"time"
)

// AddTestNode adds node name for a test or benchmark, annotated as running
// config (its desiredConfig and currentConfig), and stops it when tb ends,
// printing its daemon log if tb failed. With opts.NoDaemon the daemon starts
// only at StartDaemon, after the annotations.
func (b *Bed) AddTestNode(ctx context.Context, tb testing.TB, name, config string, opts NodeOptions) *Node {
	tb.Helper()
	n, err := b.AddNode(ctx, name, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("daemon log of %s:\n%s", name, n.DaemonLog())
		}
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		n.Stop(sctx)
	})
	if err := n.Annotate(ctx, map[string]string{
		"machineconfiguration.openshift.io/desiredConfig": config,
		"machineconfiguration.openshift.io/currentConfig": config,
	}); err != nil {
		tb.Fatal(err)
	}
	return n
}
