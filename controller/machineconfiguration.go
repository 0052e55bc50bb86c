package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	opv1 "github.com/openshift/api/operator/v1"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// machineConfigurationKey is the work queue's key of the MachineConfiguration
// named cluster. A pool's name cannot hold a "/", so it is no pool's key.
const machineConfigurationKey = "MachineConfiguration/" + names.MachineConfigurationName

// The condition the controller sets on the MachineConfiguration about its
// node disruption policy. Upstream's MachineConfiguration has condition
// types for boot images only; its operator status' generic Degraded
// (operator/v1 OperatorStatusTypeDegraded) is the one that fits, with
// reasons of nodeconfd's own.
const (
	PolicyConditionType  = "Degraded" // opv1.OperatorStatusTypeDegraded (a var there)
	ReasonPolicyMerged   = "NodeDisruptionPolicyMerged"
	ReasonPolicyRefused  = "NodeDisruptionPolicyRefused"
	policyStatusField    = "status.nodeDisruptionPolicyStatus.clusterPolicies"
	machineConfiguration = "MachineConfiguration " + names.MachineConfigurationName
)

// ReconcileMachineConfiguration writes the node disruption policy of the
// MachineConfiguration named cluster to its status, as upstream's operator
// does: spec.nodeDisruptionPolicy merged over the defaults (exactly as the
// daemons merge it, plan.PolicyFromAPI) in
// status.nodeDisruptionPolicyStatus.clusterPolicies, the generation it
// merged in status.observedGeneration, and the Degraded condition. A spec
// the daemons would refuse leaves clusterPolicies as it was (the last good
// merged policy, which the daemons keep applying) and Degraded=True names
// the object and field. Nothing is written when nothing changed; a missing
// object needs nothing (the daemons use the defaults).
func (c *Controller) ReconcileMachineConfiguration(ctx context.Context) (Result, error) {
	if c.mcfgs == nil || c.mcfgRes == nil {
		return Result{}, nil
	}
	obj, ok, err := c.mcfgs.GetStore().GetByKey(names.MachineConfigurationName)
	if err != nil || !ok {
		return Result{}, err
	}
	mc := obj.(*opv1.MachineConfiguration)
	st, refused := machineConfigurationStatus(mc, metav1.NewTime(c.Now()))
	if same, err := sameJSON(mc.Status, st); err != nil || same {
		return Result{}, err
	}
	if err := c.writeMachineConfigurationStatus(ctx, mc, st); err != nil {
		return Result{}, err
	}
	log := c.Log.With(zap.String("object", machineConfiguration), zap.Int64("generation", mc.Generation))
	if refused != nil {
		log.Error("Refused the node disruption policy; the status keeps the last good one", zap.Error(refused))
	} else {
		log.Info("Wrote the merged node disruption policy to the status",
			zap.Int("files", len(st.NodeDisruptionPolicyStatus.ClusterPolicies.Files)),
			zap.Int("units", len(st.NodeDisruptionPolicyStatus.ClusterPolicies.Units)))
	}
	return Result{}, nil
}

// machineConfigurationStatus is the status the object should have (pure):
// its status with the merged policy, the generation and the condition set;
// refused is why the spec's policy was refused, if it was.
func machineConfigurationStatus(mc *opv1.MachineConfiguration, now metav1.Time) (st opv1.MachineConfigurationStatus, refused error) {
	st = *mc.Status.DeepCopy()
	st.ObservedGeneration = mc.Generation
	cond := metav1.Condition{Type: PolicyConditionType, ObservedGeneration: mc.Generation, LastTransitionTime: now}
	p, err := plan.PolicyFromAPI(mc.Spec.NodeDisruptionPolicy, machineConfiguration)
	if err == nil {
		st.NodeDisruptionPolicyStatus.ClusterPolicies = plan.PolicyToStatus(p)
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonPolicyMerged
		cond.Message = fmt.Sprintf("spec.nodeDisruptionPolicy of generation %d is merged over the defaults into %s "+
			"(%d files, %d units), which the daemons apply", mc.Generation, policyStatusField, len(p.Files), len(p.Units))
	} else {
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonPolicyRefused
		kept := "keeps the last good merged policy, which the daemons apply until the spec is fixed"
		if len(st.NodeDisruptionPolicyStatus.ClusterPolicies.SSHKey.Actions) == 0 {
			kept = "is empty (no good policy was merged yet): the daemons merge the spec themselves and refuse " +
				"updates until it is fixed"
		}
		cond.Message = fmt.Sprintf("%v; refused, %s %s", err, policyStatusField, kept)
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st, err
}

// writeMachineConfigurationStatus patches the status subresource with the
// fields the controller owns. The patch carries the object's
// resourceVersion as the cache saw it: a spec changed since fails it with a
// conflict, and the queue tries again from fresh data. An empty list is
// sent as null, which a merge patch needs to remove it.
func (c *Controller) writeMachineConfigurationStatus(ctx context.Context, mc *opv1.MachineConfiguration,
	st opv1.MachineConfigurationStatus) error {
	cp := st.NodeDisruptionPolicyStatus.ClusterPolicies
	policies := map[string]any{"files": nil, "units": nil, "sshkey": nil}
	if len(cp.Files) > 0 {
		policies["files"] = cp.Files
	}
	if len(cp.Units) > 0 {
		policies["units"] = cp.Units
	}
	if len(cp.SSHKey.Actions) > 0 {
		policies["sshkey"] = cp.SSHKey
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": mc.ResourceVersion},
		"status": map[string]any{"observedGeneration": st.ObservedGeneration, "conditions": st.Conditions,
			"nodeDisruptionPolicyStatus": map[string]any{"clusterPolicies": policies}}})
	if err != nil {
		return fmt.Errorf("encoding the status of %s: %w", machineConfiguration, err)
	}
	if _, err := c.mcfgRes.Patch(ctx, mc.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("writing the status of %s: %w", machineConfiguration, err)
	}
	return nil
}

// sameJSON says whether a and b encode alike (a nil and an empty list do).
func sameJSON(a, b any) (bool, error) {
	x, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	y, err := json.Marshal(b)
	return err == nil && bytes.Equal(x, y), err
}
