package plan

import (
	"fmt"
	"reflect"
	"slices"

	opv1 "github.com/openshift/api/operator/v1"
)

// The merged policy in the MachineConfiguration's status
// (status.nodeDisruptionPolicyStatus.clusterPolicies), as upstream's
// operator writes it and its daemons read it: the controller merges the
// spec over the defaults (PolicyFromAPI) and writes PolicyToStatus of the
// result; the daemons read it back with PolicyFromStatus.

// StatusField is where the merged policy lives in the object.
const StatusField = "status.nodeDisruptionPolicyStatus.clusterPolicies"

// maxStatusRules is the CRD's bound on the status' files and units (the
// spec's 50 plus the defaults fit).
const maxStatusRules = 100

// PolicyToStatus renders a merged policy as the status' clusterPolicies, in
// the policy's order (the order decides nothing but keeps the status
// stable). Sources are not part of the status; PolicyFromStatus finds them
// again from the spec.
func PolicyToStatus(p Policy) opv1.NodeDisruptionPolicyClusterStatus {
	var st opv1.NodeDisruptionPolicyClusterStatus
	for _, f := range p.Files {
		st.Files = append(st.Files, opv1.NodeDisruptionPolicyStatusFile{Path: f.Path, Actions: actionsToStatus(f.Actions)})
	}
	for _, u := range p.Units {
		st.Units = append(st.Units, opv1.NodeDisruptionPolicyStatusUnit{
			Name: opv1.NodeDisruptionPolicyServiceName(u.Name), Actions: actionsToStatus(u.Actions)})
	}
	st.SSHKey.Actions = actionsToStatus(p.SSHKey)
	return st
}

func actionsToStatus(as []Action) []opv1.NodeDisruptionPolicyStatusAction {
	if len(as) == 0 {
		return nil
	}
	out := make([]opv1.NodeDisruptionPolicyStatusAction, len(as))
	for i, a := range as {
		out[i].Type = opv1.NodeDisruptionPolicyStatusActionType(a.Type)
		switch a.Type {
		case ActReload:
			out[i].Reload = &opv1.ReloadService{ServiceName: opv1.NodeDisruptionPolicyServiceName(a.Unit)}
		case ActRestart:
			out[i].Restart = &opv1.RestartService{ServiceName: opv1.NodeDisruptionPolicyServiceName(a.Unit)}
		}
	}
	return out
}

// PolicyFromStatus is PolicyFromAPI's status-side variant: it checks an
// already merged policy (the status' clusterPolicies) with the same rules
// (but the status' bounds, and upstream's Special action, allowed on
// registries.conf alone) and returns it as it is, merged over nothing. spec
// is the object's spec.nodeDisruptionPolicy, read only to name each rule's
// source as PolicyFromAPI names it: a rule the spec gives with the same
// actions is the spec's field, one the defaults give is "default", any
// other the status' field. An empty status (no controller wrote it) is
// refused: a merged policy always has the SSH key rule.
func PolicyFromStatus(st opv1.NodeDisruptionPolicyClusterStatus, spec opv1.NodeDisruptionPolicyConfig, object string) (Policy, error) {
	fail := func(field, format string, a ...any) (Policy, error) {
		return Policy{}, &PolicyError{Object: object, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	if n := len(st.Files); n > maxStatusRules {
		return fail(StatusField+".files", "%d entries, at most %d are allowed", n, maxStatusRules)
	}
	if n := len(st.Units); n > maxStatusRules {
		return fail(StatusField+".units", "%d entries, at most %d are allowed", n, maxStatusRules)
	}
	defaults := DefaultPolicy()
	var p Policy
	for i, f := range st.Files {
		field := fmt.Sprintf("%s.files[%d]", StatusField, i)
		if msg := checkPolicyPath(f.Path); msg != "" {
			return fail(field+".path", "%s", msg)
		}
		if j := slices.IndexFunc(st.Files[:i], func(o opv1.NodeDisruptionPolicyStatusFile) bool { return o.Path == f.Path }); j >= 0 {
			return fail(field+".path", "path %q is already in files[%d]", f.Path, j)
		}
		as, err := actionsFromStatus(f.Actions, field+".actions", f.Path == RegistriesConfPath)
		if err != nil {
			return fail(err.Field, "%s", err.Msg)
		}
		src := field
		if k := slices.IndexFunc(spec.Files, func(o opv1.NodeDisruptionPolicySpecFile) bool { return o.Path == f.Path }); k >= 0 &&
			sameActions(spec.Files[k].Actions, as) {
			src = fmt.Sprintf("spec.nodeDisruptionPolicy.files[%d]", k)
		} else if d := indexOf(defaults.Files, func(d FileRule) bool { return d.Path == f.Path }); d >= 0 &&
			reflect.DeepEqual(defaults.Files[d].Actions, as) {
			src = defaults.Files[d].Source
		}
		p.Files = append(p.Files, FileRule{Path: f.Path, Actions: as, Source: src})
	}
	for i, u := range st.Units {
		field := fmt.Sprintf("%s.units[%d]", StatusField, i)
		if msg := checkServiceName(string(u.Name)); msg != "" {
			return fail(field+".name", "%s", msg)
		}
		if j := slices.IndexFunc(st.Units[:i], func(o opv1.NodeDisruptionPolicyStatusUnit) bool { return o.Name == u.Name }); j >= 0 {
			return fail(field+".name", "unit %q is already in units[%d]", u.Name, j)
		}
		as, err := actionsFromStatus(u.Actions, field+".actions", false)
		if err != nil {
			return fail(err.Field, "%s", err.Msg)
		}
		src := field
		if k := slices.IndexFunc(spec.Units, func(o opv1.NodeDisruptionPolicySpecUnit) bool { return o.Name == u.Name }); k >= 0 &&
			sameActions(spec.Units[k].Actions, as) {
			src = fmt.Sprintf("spec.nodeDisruptionPolicy.units[%d]", k)
		} else if d := indexOf(defaults.Units, func(d UnitRule) bool { return d.Name == string(u.Name) }); d >= 0 &&
			reflect.DeepEqual(defaults.Units[d].Actions, as) {
			src = defaults.Units[d].Source
		}
		p.Units = append(p.Units, UnitRule{Name: string(u.Name), Actions: as, Source: src})
	}
	as, err := actionsFromStatus(st.SSHKey.Actions, StatusField+".sshkey.actions", false)
	if err != nil {
		return fail(err.Field, "%s", err.Msg)
	}
	p.SSHKey, p.SSHKeySource = as, StatusField+".sshkey"
	switch {
	case len(spec.SSHKey.Actions) > 0 && sameActions(spec.SSHKey.Actions, as):
		p.SSHKeySource = "spec.nodeDisruptionPolicy.sshkey"
	case len(spec.SSHKey.Actions) == 0 && reflect.DeepEqual(defaults.SSHKey, as):
		p.SSHKeySource = defaults.SSHKeySource
	}
	return p, nil
}

// actionsFromStatus checks one rule's actions as actionsFromAPI does; the
// status' Special (upstream's reserved action of registries.conf) is
// allowed, alone, where special says so.
func actionsFromStatus(in []opv1.NodeDisruptionPolicyStatusAction, field string, special bool) ([]Action, *fieldMsg) {
	spec := make([]opv1.NodeDisruptionPolicySpecAction, len(in))
	for i, a := range in {
		if a.Type == opv1.SpecialStatusAction {
			f := fmt.Sprintf("%s[%d].type", field, i)
			switch {
			case !special:
				return nil, &fieldMsg{f, fmt.Sprintf("Special is reserved for %s", RegistriesConfPath)}
			case len(in) > 1:
				return nil, &fieldMsg{f, "Special can only be given alone"}
			case a.Reload != nil || a.Restart != nil:
				return nil, &fieldMsg{f, "Special takes no service"}
			}
			return []Action{{Type: ActSpecial}}, nil
		}
		spec[i] = opv1.NodeDisruptionPolicySpecAction{Type: opv1.NodeDisruptionPolicySpecActionType(a.Type),
			Reload: a.Reload, Restart: a.Restart}
	}
	return actionsFromAPI(spec, field)
}

// sameActions says whether a spec rule's actions are as.
func sameActions(in []opv1.NodeDisruptionPolicySpecAction, as []Action) bool {
	got, err := actionsFromAPI(in, "")
	return err == nil && reflect.DeepEqual(got, as)
}
