package phases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"go.uber.org/zap"
)

// AppliedName is the name of the config kept on the node as the one it
// runs (applied-config.json), "" when there is none. A node with no
// currentConfig annotation but such a copy (set up by `start --once-from`,
// or a node registered again) is updated from it, so that what only that
// config had is removed.
func AppliedName(host Host) (string, error) {
	data, err := host.ReadState(AppliedFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	var mc struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &mc); err != nil {
		return "", fmt.Errorf("reading the applied config %s: %w", AppliedFileName, err)
	}
	return mc.Metadata.Name, nil
}

// updateFromApplied makes the update of a node that is not adopted start
// from the config kept on the node as applied, when there is one other
// than the desired config (a node set up by `start --once-from`, or one
// registered again): the diff then removes what only that config had,
// instead of leaving it behind. It says so for the adoption's message.
func updateFromApplied(ctx context.Context, d Data) string {
	u := d.Update()
	from, err := AppliedName(d.Ports().Host)
	if err != nil {
		LogFrom(ctx, zap.NewNop()).Warn("Cannot read the config kept on the node", zap.Error(err))
		return ""
	}
	if from == "" || from == u.DesiredName {
		return ""
	}
	u.CurrentName, d.Progress().Current = from, from
	return " from " + from + ", the config kept on the node as applied"
}
