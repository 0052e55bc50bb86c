package plan

import (
	"reflect"
	"testing"
)

// An update runs the post action that earlier written updates left undone
// with its own: a reboot wins, lists are joined without repeats, a drain
// either asks for is kept, and the first reason names who owes it.
func TestOwing(t *testing.T) {
	crio := Action{Type: ActReload, Unit: CRIOUnit}
	foo := Action{Type: ActRestart, Unit: "foo.service"}
	reload := Restored(false, []Action{crio}, false, "", []string{"/etc/containers/registries.d/x.yaml: Reload crio.service [rule default]"})
	owedReboot := Restored(true, nil, true, "", nil)
	by := []string{"rendered-a"}
	const why = "rendered-a (written, replaced before its post action ran): "
	tests := []struct {
		name    string
		a, owed PostAction
		by      []string
		want    PostAction
	}{
		{"nothing owed", reload, PostAction{}, by, reload},
		{"an owed reboot", reload, owedReboot, by, PostAction{Kind: ActionReboot, Drain: true, DrainReason: "the node reboots",
			Reasons: []string{why + "Reboot [owed]", reload.Reasons[0]}}},
		{"its own reboot covers the owed actions", owedReboot, Restored(false, []Action{foo}, false, "", nil), by,
			PostAction{Kind: ActionReboot, Drain: true, DrainReason: "the node reboots", Reasons: []string{why + "Restart foo.service [owed]"}}},
		{"actions joined, none twice", reload, Restored(false, []Action{foo, crio}, false, "", nil), by,
			PostAction{Kind: ActionReloadCRIO, Actions: []Action{crio, foo},
				Reasons: []string{why + "Restart foo.service, Reload crio.service [owed]", reload.Reasons[0]}}},
		{"an owed drain kept", PostAction{}, Restored(false, []Action{{Type: ActDrain}, foo}, true, "the policy asks for a drain", nil),
			[]string{"rendered-z", "rendered-a"}, PostAction{Kind: ActionRestartUnit, Actions: []Action{{Type: ActDrain}, foo}, Drain: true,
				DrainReason: "the policy asks for a drain",
				Reasons:     []string{"rendered-z, rendered-a (written, replaced before its post action ran): Drain, Restart foo.service [owed]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Owing(tt.owed, tt.by); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Owing:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
