package phases

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/vincent-petithory/dataurl"
)

// maxShownString is the longest string value a diff shows as it is; a
// longer one (a tang advertisement, a key) is summed up by size and hash.
const maxShownString = 200

// leaf is one scalar of an unreconcilable section, flattened: its path
// below the field, what the diff shows, and what is compared (a hash for
// what is not shown).
type leaf struct {
	path, shown, compared string
}

// valueDiff returns the changes of one unreconcilable field between its
// current and desired canonical JSON values, one per scalar that differs:
// "path: current -> desired", the path below the field prefixed by the
// element's selector ("[name=core]"), "(none)" for a side without it. One
// line each, so that kubectl describe, which does not indent the lines of
// a value, stays readable. Password hashes, HTTP headers and contents
// sources are never shown: the diff says they are set, and sizes and
// hashes tell contents apart.
func valueDiff(selector, cur string, curOK bool, des string, desOK bool) []string {
	var changes []string
	c, d := flatten(cur, curOK), flatten(des, desOK)
	for _, p := range unionPaths(c, d) {
		cl, inC := c[p]
		dl, inD := d[p]
		if inC && inD && cl.compared == dl.compared {
			continue
		}
		from, to := none, none
		if inC {
			from = cl.shown
		}
		if inD {
			to = dl.shown
		}
		if from == to { // a secret that changed
			to = "(changed, not shown)"
		}
		changes = append(changes, change(selector+p, from, to))
	}
	return changes
}

// none stands for a value a config does not set.
const none = "(none)"

func change(path, from, to string) string {
	if path = strings.TrimPrefix(path, "."); path == "" {
		return from + " -> " + to
	}
	return path + ": " + from + " -> " + to
}

func unionPaths(a, b map[string]leaf) []string {
	var out []string
	for p := range a {
		out = append(out, p)
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// flatten decodes a canonical JSON value into its scalars by path.
func flatten(raw string, ok bool) map[string]leaf {
	out := map[string]leaf{}
	if !ok {
		return out
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		out[""] = summed("", raw, "characters")
		return out
	}
	walk(out, "", "", v)
	return out
}

// walk adds the scalars of v under path; key is v's own key in its object.
func walk(out map[string]leaf, path, key string, v any) {
	switch key {
	case "passwordHash":
		out[path] = leaf{path: path, shown: "(set, not shown)", compared: hashOf(fmt.Sprint(v))}
		return
	case "httpHeaders":
		b, _ := json.Marshal(v)
		out[path] = leaf{path: path, shown: "(set, not shown)", compared: hashOf(string(b))}
		return
	case "source":
		if s, ok := v.(string); ok {
			out[path] = sourceLeaf(path, s)
			return
		}
	}
	switch x := v.(type) {
	case nil:
	case map[string]any:
		for k, e := range x {
			walk(out, path+"."+k, k, e)
		}
	case []any:
		ids := elementIDs(x)
		for i, e := range x {
			walk(out, path+"["+ids[i]+"]", "", e)
		}
	case string:
		if len(x) > maxShownString {
			out[path] = summed(path, x, "characters")
			return
		}
		q := strconv.Quote(x)
		out[path] = leaf{path: path, shown: q, compared: q}
	default:
		s := fmt.Sprint(x)
		out[path] = leaf{path: path, shown: s, compared: s}
	}
}

// elementIDs names list elements by their identity (path, name, device)
// when each has a distinct one, else by their index.
func elementIDs(list []any) []string {
	ids := make([]string, len(list))
	seen := map[string]bool{}
	for i, e := range list {
		ids[i] = identity(e)
		if ids[i] == "" || seen[ids[i]] {
			for j := range list {
				ids[j] = strconv.Itoa(j)
			}
			return ids
		}
		seen[ids[i]] = true
	}
	return ids
}

func identity(e any) string {
	if m, ok := e.(map[string]any); ok {
		for _, k := range []string{"path", "name", "device"} {
			if s, ok := m[k].(string); ok && s != "" && len(s) <= maxShownString {
				return k + "=" + s
			}
		}
	}
	return ""
}

// sourceLeaf sums up a contents source: a data URL by its decoded size and
// hash, any other URL (which may carry credentials) by its scheme and hash.
func sourceLeaf(path, s string) leaf {
	if strings.HasPrefix(s, "data:") {
		if du, err := dataurl.DecodeString(s); err == nil {
			h := hashOf(string(du.Data))
			return leaf{path: path, shown: fmt.Sprintf("(contents not shown: %d bytes, sha256 %s)", len(du.Data), h), compared: h}
		}
	}
	scheme, _, _ := strings.Cut(s, ":")
	if len(scheme) > 10 || strings.ContainsAny(scheme, "/ ") {
		scheme = "unknown"
	}
	h := hashOf(s)
	return leaf{path: path, shown: fmt.Sprintf("(%s URL not shown, sha256 %s)", scheme, h), compared: h}
}

func summed(path, s, unit string) leaf {
	h := hashOf(s)
	return leaf{path: path, shown: fmt.Sprintf("(%d %s, sha256 %s)", len(s), unit, h), compared: h}
}

// hashOf is a short SHA-256 fingerprint: enough to tell values apart.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}
