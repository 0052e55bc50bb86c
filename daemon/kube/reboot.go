package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nodeconfd/nodeconfd/names"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// maxRebootReason caps a request's text kept in the record and shown in
// the status.
const maxRebootReason = 256

// RebootRequest is the node's request and whether the controller granted
// it; "" when the node asks for nothing.
func RebootRequest(annotations map[string]string) (why string, granted bool) {
	why = annotations[names.RebootRequested]
	return why, why != "" && annotations[names.RebootGranted] == why
}

// RequestReboot asks for a reboot of the node, saying why.
func (c *Client) RequestReboot(ctx context.Context, why string) error {
	if why == "" || len(why) > maxRebootReason {
		return fmt.Errorf("a reboot request needs a reason of 1 to %d bytes, got %d", maxRebootReason, len(why))
	}
	return c.patchNode(ctx, map[string]any{"metadata": map[string]any{"annotations": map[string]any{names.RebootRequested: why}}})
}

// ClearRebootRequest removes the request the node's reboot answered. The
// patch is a test-and-set: it carries the request's value as a JSON-patch
// test, so a request made anew since (a new reason) stays.
func (c *Client) ClearRebootRequest(ctx context.Context, why string) error {
	return c.jsonPatchNode(ctx, []map[string]any{
		{"op": "test", "path": "/metadata/annotations/" + escapePointer(names.RebootRequested), "value": why},
		{"op": "remove", "path": "/metadata/annotations/" + escapePointer(names.RebootRequested)},
	})
}

// jsonPatchNode applies a JSON patch to the node. A failed test (the value
// changed since) is no error: the patch is for the value it tests.
func (c *Client) jsonPatchNode(ctx context.Context, ops []map[string]any) error {
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	node, err := c.API.Nodes().Patch(ctx, c.NodeName, types.JSONPatchType, data, metav1.PatchOptions{FieldManager: names.FieldManager})
	if apierrors.IsInvalid(err) || apierrors.IsConflict(err) { // the test failed
		return nil
	}
	if err != nil {
		return fmt.Errorf("patching node %s: %w", c.NodeName, err)
	}
	if c.nodeWritten != nil {
		c.nodeWritten(node)
	}
	return nil
}

// escapePointer escapes a JSON pointer's reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
