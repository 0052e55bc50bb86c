package main

import (
	"flag"

	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/render"
)

// provenanceOptions are the start flags of the check that a desired config
// is its pool's merge (daemon.Provenance, docs/security.md).
type provenanceOptions struct {
	verify                   bool
	osImage, extensionsImage string
}

func addProvenanceFlags(fs *flag.FlagSet) *provenanceOptions {
	var p provenanceOptions
	fs.BoolVar(&p.verify, "verify-rendered-configs", true,
		"apply a desired config only if it is the merge of its pool's MachineConfigs, as nodeconfd controller renders them, "+
			"or a config the node ran before, unchanged (false: apply any config of an allowed name, as machine-config-daemon does; "+
			"only for configs written by hand, never with nodeconfd controller)")
	fs.StringVar(&p.osImage, "base-os-image-url", "",
		"the controller's --base-os-image-url: the OS image a rendered config holds when no MachineConfig sets one")
	fs.StringVar(&p.extensionsImage, "base-os-extensions-image", "", "the controller's --base-os-extensions-image")
	return &p
}

// build is the check, nil when it is off.
func (p *provenanceOptions) build(objects *kube.Watch, api *kube.Client, limits plan.Limits) *daemon.Provenance {
	if !p.verify {
		return nil
	}
	return &daemon.Provenance{Pools: objects.Pools, Fragments: api.Fragments,
		Options: render.Options{BaseOSImageURL: p.osImage, BaseOSExtensionsImage: p.extensionsImage, Limits: limits}}
}
