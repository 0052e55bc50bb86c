package plan

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	opv1 "github.com/openshift/api/operator/v1"
)

// The limits of the MachineConfiguration CRD's nodeDisruptionPolicy,
// checked again here: a policy reaches the daemon from a cluster whose CRD
// may be older or looser, or from a file.
const (
	maxPolicyFiles   = 50
	maxPolicyUnits   = 50
	maxPolicyActions = 10
	maxServiceName   = 255
	maxPolicyPath    = 4096 // PATH_MAX: no file the config writes is longer
)

var (
	serviceSuffix = regexp.MustCompile(`\.(service|socket|device|mount|automount|swap|target|path|timer|snapshot|slice|scope)$`)
	serviceName   = regexp.MustCompile(`^[a-zA-Z0-9:._\\-]+\.`)
)

// PolicyError is a node disruption policy refused, with the field that
// makes it so.
type PolicyError struct {
	// Object names the policy's source ("MachineConfiguration cluster", or
	// a file name); Field the field under it.
	Object, Field, Msg string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("node disruption policy of %s: %s: %s", e.Object, e.Field, e.Msg)
}

// PolicyFromAPI checks an administrator's nodeDisruptionPolicy against the
// CRD's limits and rules (and that each path is absolute and clean, which
// the CRD does not check: upstream silently never matches such a path) and
// returns its rules merged over the defaults. object names the policy's
// source for errors; fields are under spec.nodeDisruptionPolicy.
func PolicyFromAPI(c opv1.NodeDisruptionPolicyConfig, object string) (Policy, error) {
	const base = "spec.nodeDisruptionPolicy"
	fail := func(field, format string, a ...any) (Policy, error) {
		return Policy{}, &PolicyError{Object: object, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	var user Policy
	if n := len(c.Files); n > maxPolicyFiles {
		return fail(base+".files", "%d entries, at most %d are allowed", n, maxPolicyFiles)
	}
	if n := len(c.Units); n > maxPolicyUnits {
		return fail(base+".units", "%d entries, at most %d are allowed", n, maxPolicyUnits)
	}
	for i, f := range c.Files {
		field := fmt.Sprintf("%s.files[%d]", base, i)
		if msg := checkPolicyPath(f.Path); msg != "" {
			return fail(field+".path", "%s", msg)
		}
		if j := slices.IndexFunc(c.Files[:i], func(o opv1.NodeDisruptionPolicySpecFile) bool { return o.Path == f.Path }); j >= 0 {
			return fail(field+".path", "path %q is already in files[%d]", f.Path, j)
		}
		as, err := actionsFromAPI(c.Files[i].Actions, field+".actions")
		if err != nil {
			return fail(err.Field, "%s", err.Msg)
		}
		user.Files = append(user.Files, FileRule{Path: f.Path, Actions: as, Source: field})
	}
	for i, u := range c.Units {
		field := fmt.Sprintf("%s.units[%d]", base, i)
		if msg := checkServiceName(string(u.Name)); msg != "" {
			return fail(field+".name", "%s", msg)
		}
		if j := slices.IndexFunc(c.Units[:i], func(o opv1.NodeDisruptionPolicySpecUnit) bool { return o.Name == u.Name }); j >= 0 {
			return fail(field+".name", "unit %q is already in units[%d]", u.Name, j)
		}
		as, err := actionsFromAPI(u.Actions, field+".actions")
		if err != nil {
			return fail(err.Field, "%s", err.Msg)
		}
		user.Units = append(user.Units, UnitRule{Name: string(u.Name), Actions: as, Source: field})
	}
	if len(c.SSHKey.Actions) > 0 {
		as, err := actionsFromAPI(c.SSHKey.Actions, base+".sshkey.actions")
		if err != nil {
			return fail(err.Field, "%s", err.Msg)
		}
		user.SSHKey, user.SSHKeySource = as, base+".sshkey"
	}
	return DefaultPolicy().With(user), nil
}

type fieldMsg struct{ Field, Msg string }

// actionsFromAPI converts one rule's actions, with the CRD's rules: at most
// 10, Reboot and None alone, a service exactly for Reload and Restart.
func actionsFromAPI(in []opv1.NodeDisruptionPolicySpecAction, field string) ([]Action, *fieldMsg) {
	switch {
	case len(in) == 0:
		return nil, &fieldMsg{field, "no actions: give at least one (None for no action)"}
	case len(in) > maxPolicyActions:
		return nil, &fieldMsg{field, fmt.Sprintf("%d actions, at most %d are allowed", len(in), maxPolicyActions)}
	}
	out := make([]Action, 0, len(in))
	for i, a := range in {
		f := fmt.Sprintf("%s[%d]", field, i)
		t := ActionType(a.Type)
		switch t {
		case ActReboot, ActNone:
			if len(in) > 1 {
				return nil, &fieldMsg{f + ".type", fmt.Sprintf("%s can only be given alone, as it overrides every other action", t)}
			}
		case ActDrain, ActDaemonReload, ActReload, ActRestart:
		default:
			return nil, &fieldMsg{f + ".type", fmt.Sprintf("unknown action %q (want one of Reboot, Drain, Reload, Restart, DaemonReload, None)", a.Type)}
		}
		unit, msg := actionService(t, a)
		if msg != "" {
			return nil, &fieldMsg{f + "." + strings.ToLower(string(t)), msg}
		}
		if t == ActReload || t == ActRestart { // an empty name too: the CRD's pattern refuses it
			if m := checkServiceName(unit); m != "" {
				return nil, &fieldMsg{f + "." + strings.ToLower(string(t)) + ".serviceName", m}
			}
		}
		out = append(out, Action{Type: t, Unit: unit})
	}
	return out, nil
}

// actionService returns the service of a Reload or Restart, and says what
// is wrong when the union's members do not match its type.
func actionService(t ActionType, a opv1.NodeDisruptionPolicySpecAction) (string, string) {
	switch {
	case t == ActReload && a.Reload == nil:
		return "", "reload is required when type is Reload"
	case t == ActRestart && a.Restart == nil:
		return "", "restart is required when type is Restart"
	case t != ActReload && a.Reload != nil:
		return "", "reload is forbidden when type is not Reload"
	case t != ActRestart && a.Restart != nil:
		return "", "restart is forbidden when type is not Restart"
	case t == ActReload:
		return string(a.Reload.ServiceName), ""
	case t == ActRestart:
		return string(a.Restart.ServiceName), ""
	}
	return "", ""
}

// checkServiceName applies the CRD's rules for a service name, then
// systemd's.
func checkServiceName(s string) string {
	switch {
	case len(s) > maxServiceName:
		return fmt.Sprintf("service name is %d characters, at most %d are allowed", len(s), maxServiceName)
	case !serviceSuffix.MatchString(s):
		return fmt.Sprintf("service name %q has no unit type: want NAME.service (or .socket, .device, .mount, .automount, .swap, .target, .path, .timer, .snapshot, .slice, .scope)", s)
	case !serviceName.MatchString(s):
		return fmt.Sprintf("service name %q: the name before the type may only hold letters, digits, \":\", \"-\", \"_\", \".\" and \"\\\"", s)
	}
	// The CRD's pattern only checks up to the first dot ("../x.service"
	// passes it); systemd's own rules check the whole name.
	return checkUnitName(s)
}

// checkPolicyPath says what is wrong with a rule's path, if anything.
func checkPolicyPath(p string) string {
	trimmed := strings.TrimSuffix(p, "/")
	switch {
	case p == "":
		return "path is empty"
	case len(p) > maxPolicyPath:
		return fmt.Sprintf("path is %d bytes, at most %d are allowed", len(p), maxPolicyPath)
	case !path.IsAbs(p):
		return fmt.Sprintf("path %q is not absolute", p)
	case trimmed != "" && path.Clean(trimmed) != trimmed:
		return fmt.Sprintf("path %q is not clean (want %q)", p, path.Clean(p))
	}
	return ""
}
