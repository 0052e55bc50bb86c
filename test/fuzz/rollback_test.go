package fuzz

import (
	"errors"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
)

// The harness's rollback check on a write that fails after it changed
// files and units' enablement: the update from the base config masks
// base.service, replaces and removes files, then enabling a new unit fails.
// The rollback must put back every file and base.service's enablement, or
// FuzzApply's check after a failed write could not be trusted.
func TestFailedWriteRollsBack(t *testing.T) {
	dir, host := newNode(t)
	units := &systemdtest.Fake{}
	if err := runUpdate(host, units, "", "rendered-base", mc("rendered-base", []byte(baseIgnition), "", "")); err != nil {
		t.Fatalf("applying the base config: %v", err)
	}
	if s, _ := units.IsEnabled(t.Context(), "base.service"); s != "enabled" {
		t.Fatalf("base.service is %s after the base config, want enabled", s)
	}
	desired := mc("rendered-next", []byte(`{"ignition":{"version":"3.4.0"},
"storage":{"files":[{"path":"/etc/base/a.conf","mode":420,"contents":{"source":"data:,next"}},
 {"path":"/etc/next.conf","contents":{"source":"data:,new"}}]},
"systemd":{"units":[{"name":"base.service","mask":true},
 {"name":"new.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n"}]}}`), "", "")
	units.SetError("enable new.service", errors.New("enable failed on purpose"))
	before := snapshot(t, dir)
	err := runUpdate(host, units, "rendered-base", desired.Name, desired)
	var se *phases.StepError
	if !errors.As(err, &se) || se.Phase != "write" {
		t.Fatalf("the update returned %v, want a failed write", err)
	}
	if ch := changed(before, snapshot(t, dir), inState); len(ch) > 0 {
		t.Errorf("the failed write left %q changed after its rollback (%v)", ch, err)
	}
	if s, _ := units.IsEnabled(t.Context(), "base.service"); s != "enabled" {
		t.Errorf("base.service is %s after the rollback, want enabled (%v; calls %q)", s, err, units.Calls)
	}
	if txns, err := host.PendingTxns(); err != nil || len(txns) > 0 {
		t.Errorf("open journals after the rollback: %q (%v)", txns, err)
	}
}
