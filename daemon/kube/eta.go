package kube

import (
	"time"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// UpdateETA is the name of status.updateETA, nodeconfd's own field of the
// MachineConfigNode status (manifests/00-crd-machineconfignodes.yaml; a
// CRD without it, as OpenShift's, prunes it).
const UpdateETA = "updateETA"

// eta is the value of status.updateETA in a merge patch: every key is
// written, a zero time as null, so that a finished update's patch removes
// the estimate and a new one's removes the finish.
func eta(e *status.ETA) map[string]any {
	at := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	return map[string]any{
		"postAction":      e.PostAction,
		"started":         at(e.Started),
		"estimatedFinish": at(e.EstimatedFinish),
		"finished":        at(e.Finished),
		"basedOn":         e.BasedOn,
	}
}
