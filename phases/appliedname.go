package phases

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
