package kube

import (
	"context"

	"github.com/nodeconfd/nodeconfd/names"
)

// ClearReapply removes the reapply request the update answers: a
// test-and-set, so a request made anew since (another value) stays.
func (c *Client) ClearReapply(ctx context.Context, why string) error {
	return c.jsonPatchNode(ctx, []map[string]any{
		{"op": "test", "path": "/metadata/annotations/" + escapePointer(names.Reapply), "value": why},
		{"op": "remove", "path": "/metadata/annotations/" + escapePointer(names.Reapply)},
	})
}
