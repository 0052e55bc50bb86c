package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/daemon/disruption"
	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/osupdate"
	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/preview"
)

// Exit statuses of `nodeconfd plan`.
const (
	planApplies = 0
	planRefused = 1
	planUsage   = 2
)

// planTimeout bounds the API requests of a preview from the cluster.
const planTimeout = time.Minute

type planOptions struct {
	current, desired, node, kubeconfig, pool, output, policyFile string
	rootMount                                                    string
	configPattern                                                plan.ConfigPattern
	limits                                                       plan.Limits
	drain                                                        forecastOptions // planforecast.go
}

func parsePlanFlags(args []string, stderr io.Writer) (planOptions, error) {
	var o planOptions
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage:\n  nodeconfd plan --current A.yaml --desired B.yaml [flags]\n"+
			"  nodeconfd plan --node NAME [--desired NAME] [--kubeconfig FILE] [flags]\n\n"+
			"Prints what the update would do, as prepare decides it, without doing it.\n"+
			"Exit status: 0 it would be applied, 1 it would be refused, 2 usage error.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.current, "current", "", "the config the node runs: a MachineConfig file (YAML or JSON, as oc get mc NAME -o yaml prints it); with --node, read from the cluster")
	fs.StringVar(&o.desired, "desired", "", "the config to preview: a MachineConfig file; with --node, a MachineConfig name (default: the node's desiredConfig)")
	fs.StringVar(&o.node, "node", "", "read the node's currentConfig and desiredConfig and the MachineConfigs from the cluster")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file for --node (default: in-cluster config)")
	fs.StringVar(&o.pool, "pool", "", "the node's pool, for the config name rule (default: the node's role label with --node, else worker)")
	fs.StringVar(&o.output, "o", "text", "output: text or json")
	o.drain.flags(fs)
	fs.StringVar(&o.rootMount, "root-mount", "", "the node's root filesystem (run on the node, e.g. in its daemon pod: /rootfs): "+
		"also make prepare's checks of the node (owners, paths, the booted OS) and, with --node, diff from the node's copy of its config")
	fs.StringVar(&o.policyFile, "node-disruption-policy", "", "a file holding the nodeDisruptionPolicy block "+
		"(or `oc get machineconfiguration cluster -o yaml`); default: upstream's defaults only")
	fs.StringVar(&o.policyFile, "post-action-policy", "", "old name of --node-disruption-policy")
	pattern := fs.String("allowed-config-pattern", plan.DefaultConfigPattern, "the daemon's --allowed-config-pattern")
	limitFlags(fs, &o.limits, "the daemon's")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.output != "text" && o.output != "json":
		err = fmt.Errorf("-o %q: want text or json", o.output)
	case o.node == "" && o.desired == "":
		err = errors.New("give --current and --desired files, or --node")
	case o.node != "" && o.current != "":
		err = errors.New("--current is read from the cluster with --node")
	}
	if err == nil {
		err = o.limits.Check()
	}
	if err == nil {
		if o.configPattern, err = plan.ParseConfigPattern(*pattern); err != nil {
			err = fmt.Errorf("--allowed-config-pattern: %w", err)
		}
	}
	return o, err
}

// runPlan is `nodeconfd plan`; it returns the exit status.
func runPlan(args []string, stdout, stderr io.Writer) int {
	o, err := parsePlanFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return planUsage
	}
	if err != nil {
		fmt.Fprintln(stderr, "nodeconfd plan:", err)
		return planUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), planTimeout)
	defer cancel()
	var host *hostfs.FS
	if o.rootMount != "" {
		if host, err = hostfs.OpenReadOnly(o.rootMount); err != nil {
			fmt.Fprintln(stderr, "nodeconfd plan: opening the root mount:", err)
			return planUsage
		}
		defer host.Close()
	}
	in, err := planInputs(ctx, o, host)
	if err != nil {
		fmt.Fprintln(stderr, "nodeconfd plan:", err)
		return planUsage
	}
	current, desired, policy := in.current, in.desired, in.policy.ForRuntime(in.runtime) // as prepare on that node
	dec, perr := phases.PlanConfigs(current, desired, policy, o.configPattern.For(in.pool), o.limits)
	if perr == nil && in.policyErr != nil {
		perr = in.policyErr // prepare refuses the update while the policy is refused
	}
	if perr == nil && host != nil {
		if perr = checkOnNode(ctx, o, host, policy, current == nil, &dec); errors.Is(perr, errNoNodeCheck) {
			fmt.Fprintln(stderr, "nodeconfd plan:", perr)
			return planUsage
		}
	}
	if perr == nil && in.singleNode {
		dec.Action = dec.Action.OnSingleNode() // as prepare decides it on that node
	}
	cur := ""
	if current != nil {
		cur = current.Name
	}
	r := preview.Build(cur, desired.Name, dec, perr, policy)
	if host != nil {
		r.NotPreviewed = ""
	}
	if perr == nil {
		r.ETA = planETA(host, dec.Action, time.Now(), stderr) // planeta.go
	}
	if perr == nil && in.api != nil && dec.Action.NeedsDrain() {
		if r.Drain, err = o.drain.forecast(ctx, in.api, o.node); err != nil {
			fmt.Fprintln(stderr, "nodeconfd plan: no drain forecast:", err)
		}
	}
	if o.output == "json" {
		err = r.JSON(stdout)
	} else {
		err = r.Text(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "nodeconfd plan: writing the report:", err)
		return planUsage
	}
	if !r.Apply {
		return planRefused
	}
	return planApplies
}

// errNoNodeCheck marks a node-side check that could not run (as opposed
// to one that refuses the update).
var errNoNodeCheck = errors.New("cannot check the node")

// checkOnNode makes prepare's checks of the node through its root mount.
func checkOnNode(ctx context.Context, o planOptions, host *hostfs.FS, policy plan.Policy, adopting bool, dec *phases.Decision) error {
	osu, err := osupdate.Detect(ctx, o.rootMount, osupdate.Chroot{Root: o.rootMount, Timeout: osupdate.DefaultTimeout},
		osupdate.DefaultRetry())
	if err != nil {
		return fmt.Errorf("%w: detecting its OS updater: %v", errNoNodeCheck, err)
	}
	err = phases.CheckOnNode(ctx, daemon.Host{FS: host}, osu, policy, adopting, dec)
	var ce *plan.ConfigError
	var us *phases.UnsupportedError
	if err != nil && !errors.As(err, &ce) && !errors.As(err, &us) {
		return fmt.Errorf("%w: %v", errNoNodeCheck, err)
	}
	return err
}

// planInputs reads the two configs (current nil: none) and the node's pool.
// planInput is what plan decides on: the configs, the node's pool and the
// node disruption policy (or why the cluster's is refused).
type planInput struct {
	current, desired *mcfgv1.MachineConfig
	pool             string
	// singleNode: the node says the cluster has it only (no drain).
	singleNode bool
	// runtime: the node's container runtime, whose default rules apply.
	runtime   plan.Runtime
	policy    plan.Policy
	policyErr error
	// api is the cluster's, with --node (the drain's forecast reads it).
	api kubeapi.API
}

func planInputs(ctx context.Context, o planOptions, host *hostfs.FS) (planInput, error) {
	var in planInput
	var err error
	if o.node != "" {
		in, err = clusterInputs(ctx, o, host)
	} else {
		in.pool, _ = kube.Pool(nil, nil, o.pool) // no cluster: --pool, else worker
		if in.desired, err = readMachineConfig(o.desired); err == nil && o.current != "" {
			in.current, err = readMachineConfig(o.current)
		}
	}
	if err != nil || (o.node != "" && o.policyFile == "") {
		return in, err
	}
	in.policy, err = loadPolicy(o.policyFile)
	return in, err
}

// clusterPolicy is the cluster's node disruption policy, as the daemon
// reads it: the defaults without a MachineConfiguration cluster.
func clusterPolicy(ctx context.Context, api kubeapi.API) (plan.Policy, error) {
	res, err := kubeapi.MachineConfigurations(api)
	if err != nil {
		return plan.Policy{}, err
	}
	mc, err := res.Get(ctx, names.MachineConfigurationName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return plan.DefaultPolicy(), nil
	}
	if err != nil {
		return plan.Policy{}, fmt.Errorf("reading %s: %w", disruption.Object, err)
	}
	return plan.PolicyFromAPI(mc.Spec.NodeDisruptionPolicy, disruption.Object)
}

// clusterInputs reads the node's configs from the API server, through the
// daemon's own client; with the node's root mount (host), the config it
// runs comes from its copy on the node, as prepare takes it.
func clusterInputs(ctx context.Context, o planOptions, host *hostfs.FS) (planInput, error) {
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return planInput{}, err
	}
	cfg.UserAgent = "nodeconfd-plan"
	api, err := kubeapi.NewAPI(cfg)
	if err != nil {
		return planInput{}, fmt.Errorf("building the API client: %w", err)
	}
	current, desired, node, err := clusterConfigs(ctx, o, host, api)
	in := planInput{current: current, desired: desired, api: api}
	if node != nil && err == nil {
		if in.pool, err = nodePool(ctx, api, node, o.pool); err != nil {
			return in, err
		}
		in.singleNode = node.Annotations[names.ControlPlaneTopology] == names.SingleReplica
		in.runtime = plan.RuntimeOf(node.Status.NodeInfo.ContainerRuntimeVersion)
	}
	if err != nil || o.policyFile != "" {
		return in, err
	}
	var pe *plan.PolicyError
	if in.policy, err = clusterPolicy(ctx, api); errors.As(err, &pe) {
		in.policy, in.policyErr, err = plan.DefaultPolicy(), err, nil
	}
	return in, err
}

// clusterConfigs reads the node and its configs.
func clusterConfigs(ctx context.Context, o planOptions, host *hostfs.FS, api kubeapi.API) (current, desired *mcfgv1.MachineConfig,
	node *corev1.Node, err error) {
	node, err = api.Nodes().Get(ctx, o.node, metav1.GetOptions{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading node %s: %w", o.node, err)
	}
	desiredName, currentName := o.desired, node.Annotations[names.CurrentConfig]
	if desiredName == "" {
		if desiredName = node.Annotations[names.DesiredConfig]; desiredName == "" {
			return nil, nil, nil, fmt.Errorf("node %s has no %s annotation: give --desired NAME", o.node, names.DesiredConfig)
		}
	}
	if desired, err = api.MachineConfigs().Get(ctx, desiredName, metav1.GetOptions{}); err != nil {
		return nil, nil, nil, fmt.Errorf("fetching MachineConfig %q: %w", desiredName, err)
	}
	switch {
	case currentName != "" && host != nil:
		if current, _, err = phases.CurrentConfig(ctx, daemon.Host{FS: host}, &kube.Client{API: api}, currentName); err != nil {
			return nil, nil, nil, err
		}
	case currentName != "":
		if current, err = api.MachineConfigs().Get(ctx, currentName, metav1.GetOptions{}); err != nil {
			return nil, nil, nil, fmt.Errorf("fetching MachineConfig %q (node %s's currentConfig; the daemon keeps a copy "+
				"on the node in /var/lib/nodeconfd/%s: run plan on the node with --root-mount, or give that copy with --current and --desired files): %w",
				currentName, o.node, phases.AppliedFileName, err)
		}
	}
	return current, desired, node, nil
}

// readMachineConfig reads a MachineConfig from a YAML or JSON file.
func readMachineConfig(path string) (*mcfgv1.MachineConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the MachineConfig file: %w", err)
	}
	var mc mcfgv1.MachineConfig
	if err := yaml.Unmarshal(data, &mc); err != nil {
		return nil, fmt.Errorf("decoding MachineConfig file %s: %w", path, err)
	}
	if mc.Kind != "" && mc.Kind != "MachineConfig" {
		return nil, fmt.Errorf("MachineConfig file %s holds a %s, want one MachineConfig (oc get mc NAME -o yaml)", path, mc.Kind)
	}
	if mc.Name == "" {
		return nil, fmt.Errorf("MachineConfig file %s: metadata.name is empty", path)
	}
	return &mc, nil
}

// loadPolicy is the node disruption policy of file (a nodeDisruptionPolicy
// block or a MachineConfiguration) merged over the defaults; the defaults
// alone without one.
func loadPolicy(file string) (plan.Policy, error) {
	if file == "" {
		return plan.DefaultPolicy(), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return plan.Policy{}, fmt.Errorf("reading --node-disruption-policy: %w", err)
	}
	return plan.ParsePolicyFile(data, file)
}

// nodePool is the node's pool as the daemon and the controller decide it
// (kube.Pool), from the cluster's pools.
func nodePool(ctx context.Context, api kubeapi.API, node *corev1.Node, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	list, err := api.MachineConfigPools().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing the MachineConfigPools: %w", err)
	}
	all := make([]*mcfgv1.MachineConfigPool, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	return kube.Pool(all, node, "")
}
