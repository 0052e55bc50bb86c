package render

import (
	"bytes"
	"encoding/json"
)

// compactJSON encodes v as JSON without empty objects. encoding/json
// writes every struct of an Ignition config, set or not ("storage":{},
// "proxy":{}...); upstream's encoder leaves them out, and so does this:
// Ignition reads an absent object as an empty one, so nothing changes but
// the size. Keys come out sorted, so the same config gives the same bytes.
func compactJSON(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber() // modes and IDs stay exact
	var tree any
	if err := d.Decode(&tree); err != nil {
		return nil, err
	}
	return json.Marshal(prune(tree))
}

// prune drops the empty objects under an object, deepest first, so that
// an object holding only empty ones goes too.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			e = prune(e)
			if m, ok := e.(map[string]any); ok && len(m) == 0 {
				delete(t, k)
				continue
			}
			t[k] = e
		}
	case []any:
		for i, e := range t {
			t[i] = prune(e)
		}
	}
	return v
}
