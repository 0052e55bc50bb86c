package kube

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fragmentPage is the page size of the list of a pool's MachineConfigs:
// each may hold up to 1.5 MiB, so a page stays far below what one answer
// of the API server may hold.
const fragmentPage = 50

// maxFragments bounds that list: a pool of more MachineConfigs is refused
// rather than read without end (upstream's largest pools hold a few
// dozen).
const maxFragments = 1000

// Fragments lists the MachineConfigs that selector (a pool's
// machineConfigSelector, as a string) selects, page by page, to check a
// rendered config against them (daemon.Provenance).
func (c *Client) Fragments(ctx context.Context, selector string) ([]*mcfgv1.MachineConfig, error) {
	var out []*mcfgv1.MachineConfig
	opts := metav1.ListOptions{LabelSelector: selector, Limit: fragmentPage}
	for {
		list, err := c.API.MachineConfigs().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the MachineConfigs %s selects: %w", selector, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		if len(out) > maxFragments {
			return nil, fmt.Errorf("listing the MachineConfigs %s selects: more than %d", selector, maxFragments)
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}
