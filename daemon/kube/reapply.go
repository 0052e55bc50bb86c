package kube

import "context"

// Reapply is the administrator's request that the daemon bring its node
// back to the config it runs, whatever its files say (a config drift, a
// file an administrator edited by hand): the daemon forgets what the node
// runs and updates it to its desired config, adopting it when every file
// already matches (upstream's force file, /run/machine-config-daemon-force,
// as an annotation). The value says who and why; the daemon removes it
// when it starts the update, and only the daemon of its node or an
// administrator may remove it (04-admission-policy.yaml).
const Reapply = "nodeconfd.io/reapply"

// ClearReapply removes the reapply request the update answers: a
// test-and-set, so a request made anew since (another value) stays.
func (c *Client) ClearReapply(ctx context.Context, why string) error {
	return c.jsonPatchNode(ctx, []map[string]any{
		{"op": "test", "path": "/metadata/annotations/" + escapePointer(Reapply), "value": why},
		{"op": "remove", "path": "/metadata/annotations/" + escapePointer(Reapply)},
	})
}
