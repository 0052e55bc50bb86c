// Package disruption gives the daemon the node disruption policy in force:
// the cluster's MachineConfiguration named cluster (operator.openshift.io/v1),
// watched. As upstream's daemons, it reads the merged policy the controller
// wrote to status.nodeDisruptionPolicyStatus.clusterPolicies once the
// controller has seen the current spec (status.observedGeneration is
// metadata.generation); until then (no controller, or one lagging) it
// merges spec.nodeDisruptionPolicy over the upstream defaults itself. A
// policy that breaks the CRD's rules is refused, naming the field, and the
// last good one stays in force.
package disruption

import (
	"context"
	"fmt"
	"sync"
	"time"

	opv1 "github.com/openshift/api/operator/v1"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// firstReadWait bounds the wait for the object's first list. An update
// that comes right after the daemon started waits for it rather than
// failing: a failed prepare marks the node degraded until its retry (seen
// with a first list that took over 5 s on a loaded API server). A minute is
// well past a healthy server's answer; a server that does not answer in it
// fails the update anyway.
const firstReadWait = time.Minute

// Object names the watched object in errors and logs.
const Object = "MachineConfiguration " + names.MachineConfigurationName

// Source is the node disruption policy of the cluster.
type Source struct {
	Resource kubeapi.Resource[*opv1.MachineConfiguration, *opv1.MachineConfigurationList]
	// Retry is how the watch tries again after a failure (kube.Client.Retry).
	Retry kube.Retry
	Log   *zap.Logger

	mu       sync.Mutex
	inf      cache.SharedIndexInformer
	lastErr  error
	good     *plan.Policy
	goodFrom string // the resourceVersion good was read from
	refused  string // the resourceVersion last refused (logged once)
	// badStatus is the resourceVersion whose status was last unreadable
	// (logged once).
	badStatus string
}

// Start runs the watch until ctx ends.
func (s *Source) Start(ctx context.Context) {
	inf := kube.NewMachineConfigurationWatch(s.Resource, s.Retry)
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
	})
	s.mu.Lock()
	s.inf = inf
	s.mu.Unlock()
	go inf.RunWithContext(ctx)
}

// Policy is the policy in force: the object's (its status' merged policy
// when the controller has seen the current spec, else its spec merged over
// the defaults here: policyOf);
// the defaults when the cluster has no such object (or no such resource:
// a cluster without the CRD); the last good one while the object breaks
// the rules. It fails while none can be had: the object not read yet, or
// refused with none good before (prepare then refuses the update, naming
// the field, and tries again).
func (s *Source) Policy() (plan.Policy, error) {
	s.mu.Lock()
	inf := s.inf
	s.mu.Unlock()
	if inf == nil {
		return plan.Policy{}, fmt.Errorf("reading the node disruption policy of %s: the watch is not started", Object)
	}
	if !inf.HasSynced() {
		ctx, cancel := context.WithTimeout(context.Background(), firstReadWait)
		cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
		cancel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !inf.HasSynced() {
		if apierrors.IsNotFound(s.lastErr) {
			return plan.DefaultPolicy(), nil // no such resource in this cluster
		}
		if s.good != nil {
			return *s.good, nil
		}
		if s.lastErr != nil {
			return plan.Policy{}, fmt.Errorf("reading the node disruption policy of %s: %w", Object, s.lastErr)
		}
		return plan.Policy{}, fmt.Errorf("reading the node disruption policy of %s: not read yet", Object)
	}
	obj, exists, _ := inf.GetStore().GetByKey(names.MachineConfigurationName)
	if !exists {
		return plan.DefaultPolicy(), nil
	}
	mc := obj.(*opv1.MachineConfiguration)
	if s.good != nil && s.goodFrom == mc.ResourceVersion {
		return *s.good, nil
	}
	p, from, err := s.policyOf(mc)
	if err != nil {
		return s.refuse(mc.ResourceVersion, err)
	}
	s.good, s.goodFrom = &p, mc.ResourceVersion
	if s.Log != nil {
		s.Log.Info("Read the node disruption policy", zap.String("object", Object), zap.String("from", from),
			zap.String("resourceVersion", mc.ResourceVersion), zap.Int64("generation", mc.Generation),
			zap.Int("files", len(mc.Spec.NodeDisruptionPolicy.Files)), zap.Int("units", len(mc.Spec.NodeDisruptionPolicy.Units)))
	}
	return p, nil
}

// policyOf is the object's policy: the merged one the controller wrote to
// the status, once it has seen the current spec (status.observedGeneration
// is metadata.generation) and written a policy; else (no controller, or
// one that has not caught up with the spec yet, or a status that breaks
// the rules) the spec merged here over the defaults, as before there was a
// controller. from says which. While the controller refuses the spec, its
// status keeps the last good merged policy, and so does the daemon.
func (s *Source) policyOf(mc *opv1.MachineConfiguration) (p plan.Policy, from string, err error) {
	cp := mc.Status.NodeDisruptionPolicyStatus.ClusterPolicies
	written := len(cp.Files) > 0 || len(cp.Units) > 0 || len(cp.SSHKey.Actions) > 0
	if mc.Generation != 0 && mc.Status.ObservedGeneration == mc.Generation && written {
		p, err := plan.PolicyFromStatus(cp, mc.Spec.NodeDisruptionPolicy, Object)
		if err == nil {
			return p, plan.StatusField, nil
		}
		if s.Log != nil && s.badStatus != mc.ResourceVersion {
			s.badStatus = mc.ResourceVersion
			s.Log.Warn("The status' node disruption policy breaks the rules; merging the spec instead",
				zap.String("object", Object), zap.String("resourceVersion", mc.ResourceVersion), zap.Error(err))
		}
	}
	p, err = plan.PolicyFromAPI(mc.Spec.NodeDisruptionPolicy, Object)
	return p, "spec.nodeDisruptionPolicy", err
}

// refuse keeps the last good policy in force, or fails without one; it
// logs each refused version once.
func (s *Source) refuse(version string, err error) (plan.Policy, error) {
	if s.refused != version && s.Log != nil {
		s.refused = version
		s.Log.Error("Refused the node disruption policy", zap.String("object", Object),
			zap.String("resourceVersion", version), zap.Bool("lastGoodInForce", s.good != nil), zap.Error(err))
	}
	if s.good != nil {
		return *s.good, nil
	}
	return plan.Policy{}, err
}
