package kube

import "github.com/nodeconfd/nodeconfd/phases/status"

// irreconcilable is the value of status.irreconcilableChanges in a status
// patch: the entries, or JSON null, which removes the field (the API takes
// no empty list).
func irreconcilable(s status.Snapshot) any {
	if len(s.IrreconcilableChanges) == 0 {
		return nil
	}
	return s.IrreconcilableChanges
}
