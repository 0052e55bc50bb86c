package plan

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	opv1 "github.com/openshift/api/operator/v1"
)

func specAct(t opv1.NodeDisruptionPolicySpecActionType, svc string) opv1.NodeDisruptionPolicySpecAction {
	a := opv1.NodeDisruptionPolicySpecAction{Type: t}
	switch t {
	case opv1.ReloadSpecAction:
		a.Reload = &opv1.ReloadService{ServiceName: opv1.NodeDisruptionPolicyServiceName(svc)}
	case opv1.RestartSpecAction:
		a.Restart = &opv1.RestartService{ServiceName: opv1.NodeDisruptionPolicyServiceName(svc)}
	}
	return a
}

func statusAct(t opv1.NodeDisruptionPolicyStatusActionType, svc string) opv1.NodeDisruptionPolicyStatusAction {
	a := opv1.NodeDisruptionPolicyStatusAction{Type: t}
	switch t {
	case opv1.ReloadStatusAction:
		a.Reload = &opv1.ReloadService{ServiceName: opv1.NodeDisruptionPolicyServiceName(svc)}
	case opv1.RestartStatusAction:
		a.Restart = &opv1.RestartService{ServiceName: opv1.NodeDisruptionPolicyServiceName(svc)}
	}
	return a
}

func statusActs(a ...opv1.NodeDisruptionPolicyStatusAction) []opv1.NodeDisruptionPolicyStatusAction {
	return a
}

func TestPolicyToStatus(t *testing.T) {
	tests := []struct {
		name string
		in   Policy
		want opv1.NodeDisruptionPolicyClusterStatus
	}{
		{"empty", Policy{}, opv1.NodeDisruptionPolicyClusterStatus{}},
		{"every action", Policy{
			Files: []FileRule{
				{Path: "/etc/a", Actions: []Action{{Type: ActDrain}, {Type: ActReload, Unit: "a.service"}}, Source: "spec.nodeDisruptionPolicy.files[0]"},
				{Path: RegistriesConfPath, Actions: []Action{{Type: ActSpecial}}, Source: "default"},
				{Path: "/etc/b", Actions: []Action{{Type: ActReboot}}},
			},
			Units:  []UnitRule{{Name: "b.service", Actions: []Action{{Type: ActDaemonReload}, {Type: ActRestart, Unit: "b.service"}}}},
			SSHKey: []Action{{Type: ActNone}}, SSHKeySource: "default",
		}, opv1.NodeDisruptionPolicyClusterStatus{
			Files: []opv1.NodeDisruptionPolicyStatusFile{
				{Path: "/etc/a", Actions: statusActs(statusAct(opv1.DrainStatusAction, ""), statusAct(opv1.ReloadStatusAction, "a.service"))},
				{Path: RegistriesConfPath, Actions: statusActs(statusAct(opv1.SpecialStatusAction, ""))},
				{Path: "/etc/b", Actions: statusActs(statusAct(opv1.RebootStatusAction, ""))},
			},
			Units: []opv1.NodeDisruptionPolicyStatusUnit{{Name: "b.service",
				Actions: statusActs(statusAct(opv1.DaemonReloadStatusAction, ""), statusAct(opv1.RestartStatusAction, "b.service"))}},
			SSHKey: opv1.NodeDisruptionPolicyStatusSSHKey{Actions: statusActs(statusAct(opv1.NoneStatusAction, ""))},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PolicyToStatus(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PolicyToStatus =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
	// The defaults: every rule, in order, Special kept for registries.conf.
	st := PolicyToStatus(DefaultPolicy())
	if len(st.Files) != len(DefaultPolicy().Files) || len(st.Units) != len(DefaultPolicy().Units) {
		t.Fatalf("defaults: %d files, %d units", len(st.Files), len(st.Units))
	}
	for i, f := range DefaultPolicy().Files {
		if st.Files[i].Path != f.Path {
			t.Errorf("defaults: files[%d] = %s, want %s", i, st.Files[i].Path, f.Path)
		}
		if f.Path == RegistriesConfPath && st.Files[i].Actions[0].Type != opv1.SpecialStatusAction {
			t.Errorf("defaults: registries.conf is %v, want Special", st.Files[i].Actions)
		}
	}
}

// What the controller writes, the daemon reads back as the policy it would
// have merged from the spec itself, sources included.
func TestPolicyStatusRoundTrip(t *testing.T) {
	files := func(fs ...opv1.NodeDisruptionPolicySpecFile) opv1.NodeDisruptionPolicyConfig {
		return opv1.NodeDisruptionPolicyConfig{Files: fs}
	}
	specs := map[string]opv1.NodeDisruptionPolicyConfig{
		"empty": {},
		"override a default and add": files(
			opv1.NodeDisruptionPolicySpecFile{Path: "/etc/containers/policy.json", Actions: []opv1.NodeDisruptionPolicySpecAction{specAct(opv1.RebootSpecAction, "")}},
			opv1.NodeDisruptionPolicySpecFile{Path: "/etc/foo/", Actions: []opv1.NodeDisruptionPolicySpecAction{specAct(opv1.DrainSpecAction, ""), specAct(opv1.RestartSpecAction, "foo.service")}}),
		"registries.conf replaced": files(opv1.NodeDisruptionPolicySpecFile{Path: RegistriesConfPath,
			Actions: []opv1.NodeDisruptionPolicySpecAction{specAct(opv1.ReloadSpecAction, "crio.service")}}),
		"a default restated": files(opv1.NodeDisruptionPolicySpecFile{Path: "/var/lib/kubelet/config.json",
			Actions: []opv1.NodeDisruptionPolicySpecAction{specAct(opv1.NoneSpecAction, "")}}),
		"units and sshkey": {
			Units: []opv1.NodeDisruptionPolicySpecUnit{
				{Name: "iri-registry.service", Actions: []opv1.NodeDisruptionPolicySpecAction{specAct(opv1.NoneSpecAction, "")}},
				{Name: "chronyd.service", Actions: []opv1.NodeDisruptionPolicySpecAction{specAct(opv1.ReloadSpecAction, "chronyd.service")}}},
			SSHKey: opv1.NodeDisruptionPolicySpecSSHKey{Actions: []opv1.NodeDisruptionPolicySpecAction{specAct(opv1.DrainSpecAction, "")}},
		},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			want, err := PolicyFromAPI(spec, "MachineConfiguration cluster")
			if err != nil {
				t.Fatal(err)
			}
			got, err := PolicyFromStatus(PolicyToStatus(want), spec, "MachineConfiguration cluster")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read back\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// A status merged from another spec than the one at hand (the last good
// policy kept while the spec is refused) keeps its rules; a rule the spec
// no longer gives is named by its status field.
func TestPolicyFromStatusSources(t *testing.T) {
	good := opv1.NodeDisruptionPolicyConfig{Files: []opv1.NodeDisruptionPolicySpecFile{
		{Path: "/etc/good", Actions: []opv1.NodeDisruptionPolicySpecAction{specAct(opv1.NoneSpecAction, "")}}}}
	merged, err := PolicyFromAPI(good, "x")
	if err != nil {
		t.Fatal(err)
	}
	bad := opv1.NodeDisruptionPolicyConfig{Files: []opv1.NodeDisruptionPolicySpecFile{
		{Path: "etc/relative", Actions: []opv1.NodeDisruptionPolicySpecAction{specAct(opv1.NoneSpecAction, "")}},
		{Path: "/etc/good", Actions: []opv1.NodeDisruptionPolicySpecAction{specAct(opv1.DrainSpecAction, "")}}}}
	p, err := PolicyFromStatus(PolicyToStatus(merged), bad, "x")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := p.FileRuleFor("/etc/good")
	last := len(p.Files) - 1
	if want := StatusField + ".files[" + strconv.Itoa(last) + "]"; r.Source != want || r.Actions[0].Type != ActNone {
		t.Errorf("/etc/good: %+v, want the status' rule, source %s", r, want)
	}
	if d, _ := p.FileRuleFor("/etc/containers/policy.json"); d.Source != "default" {
		t.Errorf("a default: source %q", d.Source)
	}
}

func TestPolicyFromStatusRefuses(t *testing.T) {
	valid := func() opv1.NodeDisruptionPolicyClusterStatus { return PolicyToStatus(DefaultPolicy()) }
	file := func(p string, as ...opv1.NodeDisruptionPolicyStatusAction) opv1.NodeDisruptionPolicyClusterStatus {
		st := valid()
		st.Files = append(st.Files, opv1.NodeDisruptionPolicyStatusFile{Path: p, Actions: as})
		return st
	}
	n := len(valid().Files)
	at := func(field string) string { return StatusField + ".files[" + strconv.Itoa(n) + "]" + field }
	tooMany := valid()
	for i := len(tooMany.Files); i <= 100; i++ {
		tooMany.Files = append(tooMany.Files, opv1.NodeDisruptionPolicyStatusFile{Path: "/etc/f" + strings.Repeat("x", i),
			Actions: statusActs(statusAct(opv1.NoneStatusAction, ""))})
	}
	noSSH := valid()
	noSSH.SSHKey.Actions = nil
	specialUnit := valid()
	specialUnit.Units[0].Actions = statusActs(statusAct(opv1.SpecialStatusAction, ""))
	tests := []struct {
		name  string
		st    opv1.NodeDisruptionPolicyClusterStatus
		field string
		msg   string
	}{
		{"empty (never written)", opv1.NodeDisruptionPolicyClusterStatus{}, StatusField + ".sshkey.actions", "no actions"},
		{"no sshkey", noSSH, StatusField + ".sshkey.actions", "no actions"},
		{"too many files", tooMany, StatusField + ".files", "101 entries, at most 100"},
		{"relative path", file("etc/a", statusAct(opv1.NoneStatusAction, "")), at(".path"), "not absolute"},
		{"duplicate path", file("/var/lib/kubelet/config.json", statusAct(opv1.NoneStatusAction, "")), at(".path"), "already in files[0]"},
		{"special elsewhere", file("/etc/a", statusAct(opv1.SpecialStatusAction, "")), at(".actions[0].type"), "reserved for"},
		{"special on a unit", specialUnit, StatusField + ".units[0].actions[0].type", "reserved for"},
		{"restart without service", file("/etc/a", statusAct(opv1.RestartStatusAction, "")), at(".actions[0].restart.serviceName"), "no unit type"},
		{"reboot not alone", file("/etc/a", statusAct(opv1.DrainStatusAction, ""), statusAct(opv1.RebootStatusAction, "")), at(".actions[1].type"), "alone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PolicyFromStatus(tt.st, opv1.NodeDisruptionPolicyConfig{}, "MachineConfiguration cluster")
			pe, ok := err.(*PolicyError)
			if !ok || pe.Field != tt.field || !strings.Contains(pe.Msg, tt.msg) || pe.Object != "MachineConfiguration cluster" {
				t.Errorf("error = %v, want field %s and %q", err, tt.field, tt.msg)
			}
		})
	}
}
