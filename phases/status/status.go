// Package status holds the MachineConfigNode status contract
// (docs/status.md): condition types, reasons, the order in
// which they are shown, and pure helpers that stage condition changes.
package status

import (
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types. Primary ones get a row each in `oc get machineconfignodes`.
const (
	Updated                  = "Updated"
	UpdatePrepared           = "UpdatePrepared"
	UpdateExecuted           = "UpdateExecuted"
	UpdatePostActionComplete = "UpdatePostActionComplete"
	UpdateComplete           = "UpdateComplete"
	Resumed                  = "Resumed"

	UpdateCompatible  = "UpdateCompatible"
	Cordoned          = "Cordoned"
	Drained           = "Drained"
	AppliedFilesAndOS = "AppliedFilesAndOS"
	RebootedNode      = "RebootedNode"
	ReloadedCRIO      = "ReloadedCRIO"
	Uncordoned        = "Uncordoned"

	NodeDegraded = "NodeDegraded"
)

// Reasons that are not derived from the condition type.
const (
	ReasonNotYetOccurred      = "NotYetOccurred"
	ReasonNotRequired         = "NotRequired"
	ReasonNodeUpgradeComplete = "NodeUpgradeComplete"
	ReasonNone                = "None"
	ReasonUpdateFailed        = "UpdateFailed"
	ReasonHealthy             = "Healthy"
	// ReasonWaiting marks a phase that waits to start (a pause, a window,
	// blocking pods); its condition stays False and the message says on
	// what.
	ReasonWaiting = "Waiting"
	// ReasonRecordUnreadable is NodeDegraded's reason while the daemon
	// goes on without a progress record it could not read, until an
	// update or an adoption.
	ReasonRecordUnreadable = "ProgressRecordUnreadable"
)

// Order lists every condition type in the order the contract shows them.
func Order() []string {
	return []string{
		Updated,
		UpdatePrepared, UpdateCompatible,
		UpdateExecuted, Cordoned, Drained, AppliedFilesAndOS,
		UpdatePostActionComplete, RebootedNode, ReloadedCRIO,
		UpdateComplete, HealthChecked, Uncordoned,
		Resumed,
		NodeDegraded,
	}
}

// Parent is the primary condition a secondary one belongs to, "" for a
// primary one.
func Parent(condType string) string {
	switch condType {
	case UpdateCompatible:
		return UpdatePrepared
	case Cordoned, Drained, AppliedFilesAndOS, AppliedFiles, ImagePulledFromRegistry, AppliedOSImage:
		return UpdateExecuted
	case RebootedNode, ReloadedCRIO:
		return UpdatePostActionComplete
	case Uncordoned, HealthChecked:
		return UpdateComplete
	}
	return ""
}

// Reason is the stable reason of a condition in progress or done: a
// secondary's is its parent's type plus its own (UpdateExecutedDrained), a
// primary's is its own type.
func Reason(condType string) string {
	if p := Parent(condType); p != "" {
		return p + condType
	}
	return condType
}

// HealthyMessage is NodeDegraded's message while the node is healthy.
const HealthyMessage = "Node is healthy"

// CompletedMessage is Updated's message once the node runs config.
func CompletedMessage(config string) string { return "Node has completed update to config " + config }

// NotYetOccurredMessage is the message of a phase not reached yet.
func NotYetOccurredMessage(condType string) string {
	return fmt.Sprintf("This node has not yet entered the %s phase", condType)
}

// Initial returns every condition of the contract at False/NotYetOccurred,
// with NodeDegraded False (healthy).
func Initial(now metav1.Time) []metav1.Condition {
	order := Order()
	conds := make([]metav1.Condition, 0, len(order))
	for _, t := range order {
		conds = append(conds, reset(t, now))
	}
	return conds
}

func reset(t string, now metav1.Time) metav1.Condition {
	if t == NodeDegraded {
		return metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: ReasonHealthy,
			Message: HealthyMessage, LastTransitionTime: now}
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: ReasonNotYetOccurred,
		Message: NotYetOccurredMessage(t), LastTransitionTime: now}
}

// Set puts c into conds by type, keeping the order of the contract. The
// transition time moves only when the status value changes. It reports
// whether anything changed.
func Set(conds *[]metav1.Condition, c metav1.Condition) bool {
	for i := range *conds {
		old := &(*conds)[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message &&
			old.ObservedGeneration == c.ObservedGeneration {
			return false
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return true
	}
	*conds = append(*conds, c)
	sortByOrder(*conds)
	return true
}

// Find returns the condition of the given type, or nil.
func Find(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// ResetForUpdate puts every condition but Updated and NodeDegraded back to
// False/NotYetOccurred (step 1 of an update).
func ResetForUpdate(conds *[]metav1.Condition, now metav1.Time) bool {
	changed := false
	for _, t := range append(Order(), presentImageMode(*conds)...) {
		if t == Updated || t == NodeDegraded {
			continue
		}
		if Set(conds, reset(t, now)) {
			changed = true
		}
	}
	return changed
}

func sortByOrder(conds []metav1.Condition) {
	order := shownOrder() // Order and the split conditions (imagemode.go)
	rank := make(map[string]int, len(order))
	for i, t := range order {
		rank[t] = i
	}
	r := func(t string) int {
		if v, ok := rank[t]; ok {
			return v
		}
		return len(order)
	}
	for i := 1; i < len(conds); i++ {
		for j := i; j > 0 && r(conds[j-1].Type) > r(conds[j].Type); j-- {
			conds[j-1], conds[j] = conds[j], conds[j-1]
		}
	}
}

// NewMCN returns a MachineConfigNode for a node with every condition at
// False/NotYetOccurred.
func NewMCN(node, pool, desired string) *mcfgv1.MachineConfigNode {
	return &mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: mcfgv1.MachineConfigNodeSpec{
			Node:          mcfgv1.MCOObjectReference{Name: node},
			Pool:          mcfgv1.MCOObjectReference{Name: pool},
			ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: desired},
		},
	}
}
