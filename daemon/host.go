package daemon

import (
	"context"
	"time"

	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
	"github.com/nodeconfd/nodeconfd/phases"
)

// Host adapts the host filesystem to what the phases see. Units, when set,
// is the node's systemd: a rollback restores the units' enablement its
// journal recorded through it.
type Host struct {
	*hostfs.FS
	Units phases.Units
}

// rollbackTimeout bounds the systemd calls of one rollback.
const rollbackTimeout = 5 * time.Minute

// BeginTxn opens the update's write transaction.
func (h Host) BeginTxn(id string) (phases.Txn, error) {
	t, err := h.FS.BeginTxn(id)
	if err != nil {
		return nil, err
	}
	return txn{Txn: t, units: h.Units}, nil
}

// txn is a write transaction whose rollback restores units through systemd.
type txn struct {
	*hostfs.Txn
	units phases.Units
}

// Rollback rolls back the files and the units' enablement.
func (t txn) Rollback() error {
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	var units hostfs.Units
	if t.units != nil {
		units = t.units
	}
	return t.Txn.RollbackWith(ctx, units)
}

var _ phases.Host = Host{}
