package plan

import (
	"reflect"
	"strings"
	"testing"

	opv1 "github.com/openshift/api/operator/v1"
)

func TestPolicyFromAPI(t *testing.T) {
	cfg := opv1.NodeDisruptionPolicyConfig{
		Files: []opv1.NodeDisruptionPolicySpecFile{
			{Path: "/etc/containers/policy.json", Actions: []opv1.NodeDisruptionPolicySpecAction{{Type: opv1.RebootSpecAction}}},
			{Path: "/etc/foo/", Actions: []opv1.NodeDisruptionPolicySpecAction{{Type: opv1.DrainSpecAction},
				{Type: opv1.RestartSpecAction, Restart: &opv1.RestartService{ServiceName: "foo.service"}}}},
		},
		Units: []opv1.NodeDisruptionPolicySpecUnit{{Name: "chronyd.service", Actions: []opv1.NodeDisruptionPolicySpecAction{
			{Type: opv1.ReloadSpecAction, Reload: &opv1.ReloadService{ServiceName: "chronyd.service"}}}}},
		SSHKey: opv1.NodeDisruptionPolicySpecSSHKey{Actions: []opv1.NodeDisruptionPolicySpecAction{{Type: opv1.DaemonReloadSpecAction}}},
	}
	p, err := PolicyFromAPI(cfg, "MachineConfiguration cluster")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := p.FileRuleFor("/etc/containers/policy.json"); r.Source != "spec.nodeDisruptionPolicy.files[0]" || r.Actions[0].Type != ActReboot {
		t.Errorf("override: %+v", r)
	}
	if r, _ := p.FileRuleFor("/etc/foo/a"); !reflect.DeepEqual(r.Actions, []Action{{Type: ActDrain}, {Type: ActRestart, Unit: "foo.service"}}) {
		t.Errorf("files[1]: %+v", r)
	}
	if r, ok := p.UnitRuleFor("chronyd.service"); !ok || r.Actions[0] != (Action{Type: ActReload, Unit: "chronyd.service"}) {
		t.Errorf("unit: %+v", r)
	}
	if !reflect.DeepEqual(p.SSHKey, []Action{{Type: ActDaemonReload}}) || p.SSHKeySource != "spec.nodeDisruptionPolicy.sshkey" {
		t.Errorf("sshkey: %v %s", p.SSHKey, p.SSHKeySource)
	}
	if empty, err := PolicyFromAPI(opv1.NodeDisruptionPolicyConfig{}, "x"); err != nil || !reflect.DeepEqual(empty, DefaultPolicy()) {
		t.Errorf("an empty policy is not the defaults: %v", err)
	}
}

// Every rule of the CRD, checked again, with the field named.
func TestPolicyFromAPIRefuses(t *testing.T) {
	act := func(t opv1.NodeDisruptionPolicySpecActionType) opv1.NodeDisruptionPolicySpecAction {
		return opv1.NodeDisruptionPolicySpecAction{Type: t}
	}
	restart := func(s string) opv1.NodeDisruptionPolicySpecAction {
		return opv1.NodeDisruptionPolicySpecAction{Type: opv1.RestartSpecAction, Restart: &opv1.RestartService{ServiceName: opv1.NodeDisruptionPolicyServiceName(s)}}
	}
	file := func(p string, as ...opv1.NodeDisruptionPolicySpecAction) opv1.NodeDisruptionPolicyConfig {
		return opv1.NodeDisruptionPolicyConfig{Files: []opv1.NodeDisruptionPolicySpecFile{{Path: p, Actions: as}}}
	}
	many := make([]opv1.NodeDisruptionPolicySpecFile, 51)
	for i := range many {
		many[i] = opv1.NodeDisruptionPolicySpecFile{Path: "/etc/f" + strings.Repeat("x", i), Actions: []opv1.NodeDisruptionPolicySpecAction{act("None")}}
	}
	elevenActions := make([]opv1.NodeDisruptionPolicySpecAction, 11)
	for i := range elevenActions {
		elevenActions[i] = act("DaemonReload")
	}
	tests := []struct {
		name  string
		cfg   opv1.NodeDisruptionPolicyConfig
		field string
		msg   string
	}{
		{"too many files", opv1.NodeDisruptionPolicyConfig{Files: many}, "spec.nodeDisruptionPolicy.files", "51 entries, at most 50"},
		{"relative path", file("etc/a", act("None")), "spec.nodeDisruptionPolicy.files[0].path", `path "etc/a" is not absolute`},
		{"empty path", file("", act("None")), "spec.nodeDisruptionPolicy.files[0].path", "path is empty"},
		{"dirty path", file("/etc/../a", act("None")), "spec.nodeDisruptionPolicy.files[0].path", "not clean"},
		{"no actions", file("/etc/a"), "spec.nodeDisruptionPolicy.files[0].actions", "no actions"},
		{"too many actions", file("/etc/a", elevenActions...), "spec.nodeDisruptionPolicy.files[0].actions", "11 actions, at most 10"},
		{"reboot not alone", file("/etc/a", act("Drain"), act("Reboot")), "spec.nodeDisruptionPolicy.files[0].actions[1].type", "Reboot can only be given alone"},
		{"none not alone", file("/etc/a", act("None"), act("Drain")), "spec.nodeDisruptionPolicy.files[0].actions[0].type", "None can only be given alone"},
		{"unknown action", file("/etc/a", act("Special")), "spec.nodeDisruptionPolicy.files[0].actions[0].type", `unknown action "Special"`},
		{"restart without service", file("/etc/a", act("Restart")), "spec.nodeDisruptionPolicy.files[0].actions[0].restart", "restart is required when type is Restart"},
		{"reload without service", file("/etc/a", act("Reload")), "spec.nodeDisruptionPolicy.files[0].actions[0].reload", "reload is required"},
		{"restart on a drain", file("/etc/a", opv1.NodeDisruptionPolicySpecAction{Type: "Drain", Restart: &opv1.RestartService{ServiceName: "a.service"}}),
			"spec.nodeDisruptionPolicy.files[0].actions[0].drain", "restart is forbidden"},
		{"service without type", file("/etc/a", restart("foo")), "spec.nodeDisruptionPolicy.files[0].actions[0].restart.serviceName", "has no unit type"},
		{"empty service", file("/etc/a", restart("")), "spec.nodeDisruptionPolicy.files[0].actions[0].restart.serviceName", "has no unit type"},
		{"service with a slash", file("/etc/a", restart("../x.service")), "spec.nodeDisruptionPolicy.files[0].actions[0].restart.serviceName", "characters other than"},
		{"service with a space", file("/etc/a", restart("a b.service")), "spec.nodeDisruptionPolicy.files[0].actions[0].restart.serviceName", "may only hold"},
		{"long service", file("/etc/a", restart(strings.Repeat("a", 250)+".service")), "spec.nodeDisruptionPolicy.files[0].actions[0].restart.serviceName", "at most 255"},
		{"duplicate path", opv1.NodeDisruptionPolicyConfig{Files: []opv1.NodeDisruptionPolicySpecFile{{Path: "/a", Actions: []opv1.NodeDisruptionPolicySpecAction{act("None")}},
			{Path: "/a", Actions: []opv1.NodeDisruptionPolicySpecAction{act("None")}}}}, "spec.nodeDisruptionPolicy.files[1].path", "already in files[0]"},
		{"bad unit name", opv1.NodeDisruptionPolicyConfig{Units: []opv1.NodeDisruptionPolicySpecUnit{{Name: "foo", Actions: []opv1.NodeDisruptionPolicySpecAction{act("None")}}}},
			"spec.nodeDisruptionPolicy.units[0].name", "has no unit type"},
		{"ssh reboot with more", opv1.NodeDisruptionPolicyConfig{SSHKey: opv1.NodeDisruptionPolicySpecSSHKey{Actions: []opv1.NodeDisruptionPolicySpecAction{act("Reboot"), act("Drain")}}},
			"spec.nodeDisruptionPolicy.sshkey.actions[0].type", "Reboot can only be given alone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PolicyFromAPI(tt.cfg, "MachineConfiguration cluster")
			pe, ok := err.(*PolicyError)
			if !ok || pe.Field != tt.field || !strings.Contains(pe.Msg, tt.msg) || pe.Object != "MachineConfiguration cluster" {
				t.Errorf("error = %v, want field %s and %q", err, tt.field, tt.msg)
			}
		})
	}
}

func TestParsePolicyFile(t *testing.T) {
	block := `nodeDisruptionPolicy:
  files:
  - path: /etc/foo
    actions: [{type: Restart, restart: {serviceName: foo.service}}]
  sshkey:
    actions: [{type: Drain}]
`
	p, err := ParsePolicyFile([]byte(block), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := p.FileRuleFor("/etc/foo/x"); r.Source != "spec.nodeDisruptionPolicy.files[0]" || r.Actions[0].Unit != "foo.service" {
		t.Errorf("block: %+v", r)
	}
	whole := "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata: {name: cluster}\nspec:\n  " +
		strings.ReplaceAll(block, "\n", "\n  ")
	if p2, err := ParsePolicyFile([]byte(whole), "mc.yaml"); err != nil || !reflect.DeepEqual(p2, p) {
		t.Errorf("MachineConfiguration: %v", err)
	}
	if p3, err := ParsePolicyFile(nil, "empty.yaml"); err != nil || !reflect.DeepEqual(p3, DefaultPolicy()) {
		t.Errorf("an empty file: %v", err)
	}
	for name, tt := range map[string]struct{ data, want string }{
		"old format": {"rules:\n- {path: /etc/foo/, action: Restart, unit: foo.service}\n", "old --post-action-policy format"},
		"no block":   {"foo: 1\n", "unknown field"},
		"bad field":  {"nodeDisruptionPolicy: {files: [{path: /a, actions: [{type: Reboot}], extra: 1}]}", "unknown field"},
		"bad policy": {"nodeDisruptionPolicy: {files: [{path: a, actions: [{type: Reboot}]}]}", "file bad.yaml: spec.nodeDisruptionPolicy.files[0].path"},
		"syntax":     {"nodeDisruptionPolicy: [", "reading the node disruption policy"},
		"bad MC":     {"kind: MachineConfiguration\nspec: {nodeDisruptionPolicy: {sshkey: {actions: [{type: Nope}]}}}", "sshkey.actions[0].type"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePolicyFile([]byte(tt.data), "bad.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}
