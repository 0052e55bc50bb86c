package plan

import (
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/yaml"
)

// Rule says what a change to the files under Prefix needs. A Prefix ending
// in "/" matches the files below that directory; one without matches that
// exact path and, taken as a directory, the files below it.
type Rule struct {
	Prefix string
	Action ActionKind
	// Unit is the unit to reload or restart (ActionReloadUnit, ActionRestartUnit).
	Unit string
}

// Policy maps changed paths to post actions. The longest matching prefix
// wins; a changed file no rule matches needs a reboot.
type Policy struct {
	Rules []Rule
}

// DefaultPolicy returns the built-in rules. Besides these path rules, a
// change of SSH keys needs nothing, and a change of units, OS image, kernel
// arguments, extensions or kernel type needs a reboot.
func DefaultPolicy() Policy {
	return Policy{Rules: []Rule{
		{Prefix: "/var/lib/kubelet/config.json", Action: ActionNone},
		{Prefix: "/etc/containers/registries.conf", Action: ActionReloadCRIO},
		{Prefix: "/etc/containers/policy.json", Action: ActionReloadCRIO},
		{Prefix: "/etc/containers/registries.d/", Action: ActionReloadCRIO},
		{Prefix: "/etc/crio/policies/", Action: ActionReloadCRIO},
	}}
}

// With returns a copy of p with rules added; a rule with the same prefix as
// an existing one replaces it.
func (p Policy) With(rules ...Rule) Policy {
	out := Policy{Rules: append([]Rule(nil), p.Rules...)}
	for _, r := range rules {
		replaced := false
		for i := range out.Rules {
			if out.Rules[i].Prefix == r.Prefix {
				out.Rules[i] = r
				replaced = true
			}
		}
		if !replaced {
			out.Rules = append(out.Rules, r)
		}
	}
	return out
}

// match returns the rule with the longest prefix matching the path (the
// later one on a tie).
func (p Policy) match(file string) (Rule, bool) {
	best, found := Rule{}, false
	for _, r := range p.Rules {
		if prefixMatches(r.Prefix, file) && (!found || len(r.Prefix) >= len(best.Prefix)) {
			best, found = r, true
		}
	}
	return best, found
}

func prefixMatches(prefix, file string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(file, prefix)
	}
	return file == prefix || strings.HasPrefix(file, prefix+"/")
}

// Validate says whether the rule is well formed: an absolute clean prefix, a
// unit for Reload and Restart and none otherwise.
func (r Rule) Validate() error {
	trimmed := strings.TrimSuffix(r.Prefix, "/")
	switch {
	case r.Prefix == "":
		return fmt.Errorf("path is empty")
	case !path.IsAbs(r.Prefix):
		return fmt.Errorf("path %q is not absolute", r.Prefix)
	case trimmed != "" && path.Clean(trimmed) != trimmed:
		return fmt.Errorf("path %q is not clean", r.Prefix)
	}
	switch r.Action {
	case ActionReloadUnit, ActionRestartUnit:
		if r.Unit == "" {
			return fmt.Errorf("action %s needs a unit", actionName(r.Action))
		}
		if msg := checkUnitName(r.Unit); msg != "" {
			return fmt.Errorf("%s", msg)
		}
	case ActionNone, ActionDaemonReload, ActionReloadCRIO, ActionReboot:
		if r.Unit != "" {
			return fmt.Errorf("action %s takes no unit (got %q)", actionName(r.Action), r.Unit)
		}
	default:
		return fmt.Errorf("unknown action %d", int(r.Action))
	}
	return nil
}

// policyFile is the YAML form of an admin's policy file.
type policyFile struct {
	Rules []struct {
		Path   string `json:"path"`
		Action string `json:"action"`
		Unit   string `json:"unit,omitempty"`
	} `json:"rules"`
}

// actionNames are the policy file's action names.
const actionNames = "None, DaemonReload, Reload, Restart, ReloadCRIO, Reboot"

// actionName is the policy file's name for an action kind.
func actionName(k ActionKind) string {
	switch k {
	case ActionReloadUnit:
		return "Reload"
	case ActionRestartUnit:
		return "Restart"
	}
	return k.String()
}

// parseActionName is the inverse of actionName.
func parseActionName(s string) (ActionKind, bool) {
	for k := ActionNone; k <= ActionReboot; k++ {
		if actionName(k) == s {
			return k, true
		}
	}
	return 0, false
}

// ParsePolicy parses an admin's policy file, e.g.
//
//	rules:
//	- {path: /etc/foo/, action: Restart, unit: foo.service}
//	- {path: /etc/bar.conf, action: None}
//
// Actions are None, DaemonReload, Reload (unit), Restart (unit), ReloadCRIO
// and Reboot. Use the rules with Policy.With.
func ParsePolicy(data []byte) ([]Rule, error) {
	var f policyFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("parsing policy: %w", err)
	}
	rules := make([]Rule, 0, len(f.Rules))
	seen := map[string]int{}
	for i, fr := range f.Rules {
		kind, ok := parseActionName(fr.Action)
		if !ok {
			return nil, fmt.Errorf("policy rules[%d] (path %q): unknown action %q (want one of %s)", i, fr.Path, fr.Action, actionNames)
		}
		r := Rule{Prefix: fr.Path, Action: kind, Unit: fr.Unit}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("policy rules[%d] (path %q): %w", i, fr.Path, err)
		}
		if j, dup := seen[fr.Path]; dup {
			return nil, fmt.Errorf("policy rules[%d]: path %q is already in rules[%d]", i, fr.Path, j)
		}
		seen[fr.Path] = i
		rules = append(rules, r)
	}
	return rules, nil
}
