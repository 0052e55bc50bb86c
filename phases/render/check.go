package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	ign "github.com/coreos/ignition/v2/config/v3_5"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// maxMode is the highest file mode upstream's render accepts: no setuid,
// setgid or sticky bit (ValidateIgnition, bugzilla 2038240).
const maxMode = 0o777

// checkFragment holds one fragment to the daemon's parse, which the nodes
// would hold the rendered config to, and to upstream's checks of a
// fragment before it merges.
func checkFragment(c *mcfgv1.MachineConfig, lim plan.Limits) error {
	if _, err := plan.ParseWithLimits(c, lim); err != nil {
		return err
	}
	if len(strings.TrimSpace(string(c.Spec.Config.Raw))) == 0 {
		return nil
	}
	cfg, _, err := ign.ParseCompatibleVersion(c.Spec.Config.Raw)
	if err != nil { // the parse above accepted it
		return &plan.ConfigError{Object: c.Name, Field: "spec.config", Msg: err.Error()}
	}
	for i, f := range cfg.Storage.Files {
		if f.Mode != nil && *f.Mode > maxMode {
			return &plan.ConfigError{Object: c.Name, Field: fmt.Sprintf("spec.config.storage.files[%d].mode", i),
				Msg: fmt.Sprintf("mode %#o of %s has a setuid, setgid or sticky bit: a pool's MachineConfig cannot exceed %#o", *f.Mode, f.Path, maxMode)}
		}
	}
	return nil
}

// checkRendered holds the rendered config to upstream's size cap and to
// the daemon's parse. Every fragment passed the parse alone, so a refusal
// comes from merging them: it names the first fragment whose merge over
// the ones before it is refused.
func checkRendered(mc *mcfgv1.MachineConfig, ordered []*mcfgv1.MachineConfig, o Options) error {
	data, err := json.Marshal(mc)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", mc.Name, err)
	}
	if len(data) > MaxSize {
		return &plan.ConfigError{Object: mc.Name, Msg: fmt.Sprintf("the rendered config is %d bytes, over the %d a MachineConfig may hold "+
			"(etcd's request limit): make the pool's MachineConfigs smaller", len(data), MaxSize)}
	}
	_, perr := plan.ParseWithLimits(mc, o.Limits)
	if perr == nil {
		return nil
	}
	for k := 2; k <= len(ordered); k++ {
		spec, err := merge(ordered[:k], o)
		if err != nil {
			return err
		}
		_, err = plan.ParseWithLimits(&mcfgv1.MachineConfig{Spec: spec}, o.Limits)
		var ce *plan.ConfigError
		if errors.As(err, &ce) {
			return &plan.ConfigError{Object: ordered[k-1].Name, Field: ce.Field, More: ce.More,
				Msg: fmt.Sprintf("merged over %s (the field is the merged config's): %s", names(ordered[:k-1]), ce.Msg)}
		}
		if err != nil {
			return err
		}
	}
	return perr
}

// names lists the configs' names for a message.
func names(configs []*mcfgv1.MachineConfig) string {
	n := make([]string, len(configs))
	for i, c := range configs {
		n[i] = c.Name
	}
	return strings.Join(n, ", ")
}
