package daemon

import (
	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
	"github.com/nodeconfd/nodeconfd/phases"
)

// Host adapts the host filesystem to what the phases see.
type Host struct{ *hostfs.FS }

// BeginTxn opens the update's write transaction.
func (h Host) BeginTxn(id string) (phases.Txn, error) { return h.FS.BeginTxn(id) }

var _ phases.Host = Host{}
