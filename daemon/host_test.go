package daemon

import (
	"slices"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
)

// The phases' Rollback restores the journaled units' enablement through
// the node's systemd, which the adapter hands to the journal.
func TestHostRollbackRestoresUnits(t *testing.T) {
	fs, err := hostfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	sd := &systemdtest.Fake{}
	sd.SetEnabled("a.service", "enabled")
	txn, err := Host{FS: fs, Units: sd}.BeginTxn("u1")
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.RecordUnitStates(map[string]string{"a.service": "enabled"}); err != nil {
		t.Fatal(err)
	}
	sd.SetEnabled("a.service", "masked") // the update masked it
	if err := txn.Rollback(); err != nil {
		t.Fatal(err)
	}
	calls := sd.CallLog()
	for _, want := range []string{"unmask a.service", "enable a.service", "daemon-reload"} {
		if !slices.Contains(calls, want) {
			t.Errorf("systemd calls %v lack %q", calls, want)
		}
	}
	if ids, _ := fs.PendingTxns(); len(ids) != 0 {
		t.Errorf("pending after the rollback: %v", ids)
	}
}
