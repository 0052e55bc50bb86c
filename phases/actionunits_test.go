package phases

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// stateUnits answers is-enabled from a map ("not-found" for the rest).
type stateUnits struct {
	Units
	state map[string]string
}

func (s stateUnits) IsEnabled(_ context.Context, unit string) (string, error) {
	if st, ok := s.state[unit]; ok {
		return st, nil
	}
	return "not-found", nil
}

// A post action naming a unit the node lacks is refused before the writes,
// naming the change and rule; a unit the node has, or the config writes, is
// not.
func TestCheckActionUnits(t *testing.T) {
	node := stateUnits{state: map[string]string{"crio.service": "enabled", "kubelet.service": "static"}}
	contents := "[Service]\nExecStart=/bin/true\n"
	desired := plan.Config{
		Units: map[string]plan.Unit{"app.service": {Name: "app.service", Contents: &contents}},
		Files: map[string]plan.File{"/etc/systemd/system/file.service": {}},
	}
	for _, tc := range []struct {
		name    string
		actions []plan.Action
		reasons []string
		refused string
	}{
		{"node units", []plan.Action{{Type: plan.ActRestart, Unit: "crio.service"}, {Type: plan.ActReload, Unit: "kubelet.service"}}, nil, ""},
		{"written by the config", []plan.Action{{Type: plan.ActRestart, Unit: "app.service"}, {Type: plan.ActReload, Unit: "file.service"}}, nil, ""},
		{"special and daemon-reload need no unit", []plan.Action{{Type: plan.ActSpecial}, {Type: plan.ActDaemonReload}, {Type: plan.ActDrain}}, nil, ""},
		{"missing", []plan.Action{{Type: plan.ActRestart, Unit: "coreos-update-ca-trust.service"}},
			[]string{"/etc/pki/ca.crt: Restart coreos-update-ca-trust.service [rule default /etc/pki/ca.crt]"},
			"/etc/pki/ca.crt: Restart coreos-update-ca-trust.service [rule default /etc/pki/ca.crt]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkActionUnits(context.Background(), node, desired, plan.PostAction{Actions: tc.actions, Reasons: tc.reasons})
			var pe *plan.PolicyError
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (!errors.As(err, &pe) || pe.Field != tc.refused || !strings.Contains(pe.Msg, "does not have")):
				t.Errorf("error %v, want one naming %q", err, tc.refused)
			}
		})
	}
}
