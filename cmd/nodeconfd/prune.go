package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/controller/prune"
)

// pruneTimeout bounds the command's API requests.
const pruneTimeout = 2 * time.Minute

type pruneOptions struct {
	kubeconfig string
	keep       int
	confirm    bool
}

func parsePruneFlags(args []string, stderr io.Writer) (pruneOptions, error) {
	var o pruneOptions
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: nodeconfd prune [--kubeconfig FILE] [--keep N] [--confirm]\n\n"+
			"Lists the rendered MachineConfigs the controller created that nothing uses (no pool's spec or status,\n"+
			"no node's currentConfig, desiredConfig or failedConfig, no MachineConfigNode), past the newest --keep\n"+
			"unused ones of each pool, and why every other rendered config is kept; deletes them with --confirm.\n"+
			"As `oc adm prune renderedmachineconfigs`; the controller's --rendered-config-retention decides alike.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config)")
	fs.IntVar(&o.keep, "keep", defaultRetention, "how many of each pool's unused rendered configs to keep, the newest (0: none)")
	fs.BoolVar(&o.confirm, "confirm", false, "delete them (default: a dry run that deletes nothing)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("prune: unexpected argument %q", fs.Arg(0))
	}
	if o.keep < 0 {
		return o, fmt.Errorf("--keep %d: must not be negative", o.keep)
	}
	return o, nil
}

// runPrunes is `nodeconfd prune`.
func runPrunes(args []string) error {
	o, err := parsePruneFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "nodeconfd-prune/" + version
	api, err := kubeapi.NewAPI(cfg)
	if err != nil {
		return fmt.Errorf("building the API client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pruneTimeout)
	defer cancel()
	return pruneConfigs(ctx, api, o, os.Stdout)
}

// pruneConfigs lists the cluster's pools, nodes, MachineConfigNodes and
// MachineConfigs, decides as the controller does (prune.Decide), prints
// every verdict and, with o.confirm, deletes, each delete carrying the
// config's UID and resourceVersion as listed: a config changed or
// re-created since is not deleted.
func pruneConfigs(ctx context.Context, api kubeapi.API, o pruneOptions, w io.Writer) error {
	in := prune.Input{Keep: o.keep}
	pools, err := api.MachineConfigPools().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	nodes, err := api.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Nodes: %w", err)
	}
	mcns, err := api.MachineConfigNodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing MachineConfigNodes: %w", err)
	}
	// The configs last, so that a rendered config created while the referrers were listed
	// (and perhaps handed to a node since) is not in the list.
	configs, err := api.MachineConfigs().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing MachineConfigs: %w", err)
	}
	for i := range pools.Items {
		in.Pools = append(in.Pools, &pools.Items[i])
	}
	for i := range nodes.Items {
		in.Nodes = append(in.Nodes, &nodes.Items[i])
	}
	for i := range mcns.Items {
		in.MCNs = append(in.MCNs, &mcns.Items[i])
	}
	for i := range configs.Items {
		in.Configs = append(in.Configs, &configs.Items[i])
	}
	verdicts := prune.Decide(in)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tCONFIG\tPOOL\tCREATED\tWHY")
	deletable, deleted, failed := 0, 0, 0
	for _, v := range verdicts {
		action := "keep"
		if v.Delete {
			deletable++
			action = "delete"
			if o.confirm {
				switch err := deleteConfig(ctx, api, v.Config); {
				case err == nil:
					deleted++
					action = "deleted"
				case apierrors.IsNotFound(err):
					action = "gone"
				default:
					failed++
					action = "failed"
					v.Why += ": " + err.Error()
				}
			}
		}
		pool := v.Pool
		if pool == "" {
			pool = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", action, v.Config.Name, pool,
			v.Config.CreationTimestamp.UTC().Format(time.RFC3339), v.Why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case !o.confirm:
		fmt.Fprintf(w, "\n%d of %d rendered configs would be deleted (a dry run: nothing was deleted; "+
			"run again with --confirm to delete them).\n", deletable, len(verdicts))
	default:
		fmt.Fprintf(w, "\nDeleted %d of %d rendered configs.\n", deleted, len(verdicts))
	}
	if failed > 0 {
		return fmt.Errorf("%d rendered configs could not be deleted (see above)", failed)
	}
	return nil
}

// deleteConfig deletes mc as it was listed, and nothing else.
func deleteConfig(ctx context.Context, api kubeapi.API, mc *mcfgv1.MachineConfig) error {
	uid, rv := mc.UID, mc.ResourceVersion
	return api.MachineConfigs().Delete(ctx, mc.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
}
