package phases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// AppliedFileName is the state file that keeps, on the node, the rendered
// MachineConfig the node runs as it was applied: the update from it diffs
// against this copy, so the config the node runs need not exist in the API
// server any more. It is root-only (0600, like every state file): a config
// may carry secrets, so its contents are never logged.
const AppliedFileName = "applied-config.json"

// commitCurrent records that the node runs config name (mc): its
// currentConfig and state=Done annotations, then its copy on the node (the
// update's SetCurrent and the adoption). In that order: until the
// annotation is written an update diffs against the copy of the config it
// started from, so a restart in between runs the step again.
func commitCurrent(ctx context.Context, d Data, name string, mc *mcfgv1.MachineConfig) error {
	if err := d.Ports().Cluster.SetNodeState(ctx, name, StateDone, ""); err != nil {
		return fmt.Errorf("writing node annotations: %w", err)
	}
	return SaveApplied(d.Ports().Host, mc)
}

// SaveApplied keeps mc on the node as the config it runs (atomically,
// through Host.WriteState), once an update or an adoption is complete.
func SaveApplied(host Host, mc *mcfgv1.MachineConfig) error {
	if mc == nil {
		return errors.New("keeping the applied config: no MachineConfig")
	}
	c := mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: mc.Name, UID: mc.UID,
		ResourceVersion: mc.ResourceVersion, Labels: mc.Labels, Annotations: mc.Annotations}, Spec: mc.Spec}
	c.APIVersion, c.Kind = mcfgv1.GroupVersion.String(), "MachineConfig"
	data, err := json.Marshal(&c)
	if err != nil {
		return fmt.Errorf("keeping MachineConfig %q on the node: %w", mc.Name, err)
	}
	if err := host.WriteState(AppliedFileName, data); err != nil {
		return fmt.Errorf("keeping MachineConfig %q on the node: %w", mc.Name, err)
	}
	return recordRan(host, mc) // provenance.go
}

// LoadApplied returns the copy of the config the node runs when it is
// config name. Otherwise mc is nil and why says why not: there is no copy
// (a node last updated by an older daemon), it is another config, or it
// cannot be read. Only the named config is ever taken from the copy: a copy
// of another config is never diffed against.
func LoadApplied(host Host, name string) (mc *mcfgv1.MachineConfig, why string) {
	data, err := host.ReadState(AppliedFileName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "no copy is kept on the node"
	case err != nil:
		return nil, err.Error()
	}
	var c mcfgv1.MachineConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Sprintf("the copy on the node (%s) cannot be decoded: %v", AppliedFileName, err)
	}
	if c.Name != name {
		return nil, fmt.Sprintf("the copy on the node (%s) is of MachineConfig %q", AppliedFileName, c.Name)
	}
	return &c, ""
}

// CurrentConfig returns the config the node runs, by name: the copy kept
// on the node when it is that config, else the API server's; why is ""
// when the copy was used, else why it was not.
func CurrentConfig(ctx context.Context, host Host, configs Configs, name string) (mc *mcfgv1.MachineConfig, why string, err error) {
	if mc, why = LoadApplied(host, name); mc != nil {
		return mc, "", nil
	}
	mc, err = configs.MachineConfig(ctx, name)
	if err != nil {
		return nil, why, fmt.Errorf("fetching MachineConfig %q (%s): %w", name, why, err)
	}
	return mc, why, nil
}

// fetchCurrent parses the config the update starts from.
func fetchCurrent(ctx context.Context, d Data, name string) (plan.Config, error) {
	mc, _, err := CurrentConfig(ctx, d.Ports().Host, d.Ports().Configs, name)
	if err != nil {
		return plan.Config{}, err
	}
	return plan.ParseWithLimits(mc, d.Ports().Limits)
}

// fetchDesired fetches and parses the update's desired config from the API
// server and keeps the object, which Finish saves on the node.
func fetchDesired(ctx context.Context, d Data) (plan.Config, error) {
	u := d.Update()
	mc, err := d.Ports().Configs.MachineConfig(ctx, u.DesiredName)
	if err != nil {
		return plan.Config{}, fmt.Errorf("fetching MachineConfig %q: %w", u.DesiredName, err)
	}
	u.DesiredObject = mc
	return plan.ParseWithLimits(mc, d.Ports().Limits)
}
