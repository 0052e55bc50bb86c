package plan

import (
	"fmt"
	"path"
	"strings"
)

// The node disruption policy decides what a change of a file, a unit or the
// SSH keys needs after it is written. It has the upstream MCO's model
// (operator.openshift.io/v1 MachineConfiguration spec.nodeDisruptionPolicy):
// an ordered list of actions per file path (the longest matching path
// wins), per unit name (exact) and for the SSH keys; a change no rule
// covers needs a reboot. The defaults are upstream's (defaults.go); an
// administrator's rules replace the default of the same path or name.

// ActionType is one node disruption action (upstream's status action types).
type ActionType string

const (
	ActReboot       ActionType = "Reboot"
	ActDrain        ActionType = "Drain"
	ActReload       ActionType = "Reload"
	ActRestart      ActionType = "Restart"
	ActDaemonReload ActionType = "DaemonReload"
	ActNone         ActionType = "None"
	// ActSpecial is upstream's reserved action of registries.conf: reload
	// CRI-O, drained first only when the change is unsafe for running pods
	// (RegistriesChange). An administrator cannot name it.
	ActSpecial ActionType = "Special"
)

// Action is one action of a rule. Unit is the unit to reload or restart.
type Action struct {
	Type ActionType `json:"type"`
	Unit string     `json:"unit,omitempty"`
}

func (a Action) String() string {
	if a.Unit != "" {
		return string(a.Type) + " " + a.Unit
	}
	return string(a.Type)
}

// FileRule is the actions a change of the files at Path (that path, or
// below it taken as a directory) needs.
type FileRule struct {
	Path    string   `json:"path"`
	Actions []Action `json:"actions"`
	// Source names where the rule comes from, for plan and status:
	// "default" or the policy field ("spec.nodeDisruptionPolicy.files[2]").
	Source string `json:"source,omitempty"`
}

// UnitRule is the actions a change of the unit Name needs.
type UnitRule struct {
	Name    string   `json:"name"`
	Actions []Action `json:"actions"`
	Source  string   `json:"source,omitempty"`
}

// Policy is the merged node disruption policy.
type Policy struct {
	Files  []FileRule `json:"files,omitempty"`
	Units  []UnitRule `json:"units,omitempty"`
	SSHKey []Action   `json:"sshkey,omitempty"`
	// SSHKeySource names where the SSH key rule comes from.
	SSHKeySource string `json:"sshkeySource,omitempty"`
}

// FileRuleFor returns the rule that decides a change of the file at p: the
// one with the longest path equal to p or a directory above it, as
// upstream's FindClosestFilePolicyPathMatch (the first on a tie).
func (p Policy) FileRuleFor(file string) (FileRule, bool) {
	best, found := FileRule{}, false
	for _, r := range p.Files {
		if pathCovers(r.Path, file) && (!found || len(r.Path) > len(best.Path)) {
			best, found = r, true
		}
	}
	return best, found
}

// UnitRuleFor returns the rule of the unit name, if any.
func (p Policy) UnitRuleFor(name string) (UnitRule, bool) {
	for _, r := range p.Units {
		if r.Name == name {
			return r, true
		}
	}
	return UnitRule{}, false
}

// pathCovers reports whether a rule for rule decides file: the same path,
// or file below rule taken as a directory ("/etc/foo" and "/etc/foo/"
// both cover "/etc/foo/a", never "/etc/foobar").
func pathCovers(rule, file string) bool {
	if file == rule {
		return true
	}
	dir := strings.TrimSuffix(path.Clean(rule), "/") + "/"
	return strings.HasPrefix(path.Clean(file), dir)
}

// With returns a copy of p with the rules of user merged in as upstream's
// MergeClusterPolicies merges them: a file rule replaces the rule of the
// same path in place, a unit rule the rule of the same name, others are
// appended; user's SSH key actions, when it has any, replace p's.
func (p Policy) With(user Policy) Policy {
	out := Policy{Files: append([]FileRule(nil), p.Files...), Units: append([]UnitRule(nil), p.Units...),
		SSHKey: p.SSHKey, SSHKeySource: p.SSHKeySource}
	for _, r := range user.Files {
		if i := indexOf(out.Files, func(f FileRule) bool { return f.Path == r.Path }); i >= 0 {
			out.Files[i] = r
		} else {
			out.Files = append(out.Files, r)
		}
	}
	for _, r := range user.Units {
		if i := indexOf(out.Units, func(u UnitRule) bool { return u.Name == r.Name }); i >= 0 {
			out.Units[i] = r
		} else {
			out.Units = append(out.Units, r)
		}
	}
	if len(user.SSHKey) > 0 {
		out.SSHKey, out.SSHKeySource = user.SSHKey, user.SSHKeySource
	}
	return out
}

func indexOf[T any](s []T, f func(T) bool) int {
	for i, v := range s {
		if f(v) {
			return i
		}
	}
	return -1
}

// DescribeActions renders actions for plan and status ("Restart a.service,
// Restart crio.service").
func DescribeActions(as []Action) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.String()
	}
	return strings.Join(parts, ", ")
}

// String renders a rule for plan ("/etc/foo: Reload foo.service [default]").
func (r FileRule) String() string {
	return fmt.Sprintf("%s: %s [%s]", r.Path, DescribeActions(r.Actions), r.Source)
}
