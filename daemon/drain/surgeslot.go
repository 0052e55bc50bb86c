package drain

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nodeconfd/nodeconfd/cluster/surge"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// surgePoll is how often a daemon reads its slot Lease while it waits for
// the controller's answer: a surge waits on a budget already, and a read
// of one small object is cheap.
const surgePoll = 250 * time.Millisecond

// raise asks the controller to surge the pod's owner by one replica and
// waits for its answer. It returns nil and why when the owner must not be
// surged (the daemon's own reading, or the controller's refusal), nil and
// "" when it did not opt in.
func (d *Drainer) raise(ctx context.Context, pod *corev1.Pod) (*surge.Record, string, error) {
	w, quiet, why, err := surge.Surgeable(ctx, d.Client, pod)
	if err != nil || quiet || why != "" {
		return nil, why, err
	}
	lease, err := d.takeSlot(ctx, pod, w)
	if err != nil {
		return nil, "", err
	}
	rec, why, err := d.awaitGrant(ctx, lease)
	if err != nil || why != "" {
		if ferr := d.freeSlot(ctx, lease); ferr != nil {
			err = errors.Join(err, ferr)
		}
		return nil, why, err
	}
	return rec, "", nil
}

// awaitGrant waits for the controller's answer in the slot Lease: the
// record of the surge once the replicas are raised, or why it refused.
func (d *Drainer) awaitGrant(ctx context.Context, name string) (rec *surge.Record, why string, err error) {
	leases := d.Client.Leases(d.Surge.Namespace)
	err = wait.PollUntilContextCancel(ctx, surgePoll, false, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading surge slot %s/%s: %w", d.Surge.Namespace, name, err)
		}
		if r, ok := l.Annotations[surge.RefusedAnnotation]; ok {
			why = "nodeconfd controller refused: " + r
			return true, nil
		}
		if l.Annotations[surge.RaisedAnnotation] != "true" {
			return false, nil
		}
		got, err := surge.RecordOf(*l)
		if err != nil {
			return false, err
		}
		rec = &got
		return true, nil
	})
	if wait.Interrupted(err) {
		err = fmt.Errorf("nodeconfd controller did not answer the surge request in Lease %s/%s in time (is it running?)",
			d.Surge.Namespace, name)
	}
	return rec, why, err
}

// lower asks the controller to put a surged workload's replicas back (the
// delete of its slot Lease) and waits until it has. changed says when
// someone else changed the replicas since the surge: the controller then
// leaves them as they are.
func (d *Drainer) lower(ctx context.Context, rec surge.Record) (changed string, err error) {
	w := rec.Workload
	cur, err := surge.CurrentReplicas(ctx, d.Client, w)
	switch {
	case apierrors.IsNotFound(err):
		changed = w.String() + " is gone"
	case err != nil:
		return "", err
	case cur != rec.To:
		changed = fmt.Sprintf("%s has %d replicas, not the surge's %d: someone else changed them; left as they are", w, cur, rec.To)
	}
	if err := d.freeSlot(ctx, rec.Lease); err != nil {
		return "", err
	}
	return changed, d.awaitGone(ctx, rec.Lease)
}

// awaitGone waits until the controller has let a freed slot Lease go: the
// replicas are back.
func (d *Drainer) awaitGone(ctx context.Context, name string) error {
	leases := d.Client.Leases(d.Surge.Namespace)
	err := wait.PollUntilContextCancel(ctx, surgePoll, true, func(ctx context.Context) (bool, error) {
		_, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("waiting for nodeconfd controller to put back the surge of Lease %s/%s: %w", d.Surge.Namespace, name, err)
	}
	return nil
}

// takeSlot creates the first free slot Lease, asking for a surge of the
// pod's owner: the Lease names the pod, not the owner, which the
// controller finds from the pod itself.
func (d *Drainer) takeSlot(ctx context.Context, pod *corev1.Pod, w surge.Workload) (string, error) {
	for i := range d.Surge.Max {
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: surge.LeasePrefix + strconv.Itoa(i), Namespace: d.Surge.Namespace,
				Labels:      map[string]string{surge.NodeLabel: d.NodeName},
				Annotations: map[string]string{surge.PodAnnotation: pod.Namespace + "/" + pod.Name}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &d.NodeName},
		}
		_, err := d.Client.Leases(d.Surge.Namespace).Create(ctx, lease, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("asking for a surge of %s in Lease %s/%s: %w", w, d.Surge.Namespace, lease.Name, err)
		}
		return lease.Name, nil
	}
	return "", fmt.Errorf("%w (--drain-surge-max=%d%s)", errSurgeCap, d.Surge.Max, d.slotHolders(ctx))
}

// slotHolders names who holds the surge slots, for the message of a surge
// that found none free: a node down for good keeps its slot until its
// drain ends (the controller then lets it go) or an administrator deletes
// the Lease, and this is how they find it.
func (d *Drainer) slotHolders(ctx context.Context) string {
	list, err := d.Client.Leases(d.Surge.Namespace).List(ctx, metav1.ListOptions{LabelSelector: surge.NodeLabel,
		Limit: int64(surge.MaxSlots)})
	if err != nil || len(list.Items) == 0 {
		return ""
	}
	var held []string
	for i, l := range list.Items {
		if i == 3 {
			held = append(held, fmt.Sprintf("and %d more", len(list.Items)-3))
			break
		}
		what := "pod " + l.Annotations[surge.PodAnnotation]
		if kind, w, ok := strings.Cut(l.Annotations[surge.WorkloadAnnotation], "/"); ok { // Kind/namespace/name
			what = kind + " " + w
		}
		held = append(held, fmt.Sprintf("Lease %s held by node %s for %s", l.Name, l.Labels[surge.NodeLabel], what))
	}
	return ": " + strings.Join(held, ", ")
}

func (d *Drainer) freeSlot(ctx context.Context, name string) error {
	err := d.Client.Leases(d.Surge.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("freeing surge slot %s/%s: %w", d.Surge.Namespace, name, err)
	}
	return nil
}

// RestoreSurges ends every surge this node's slot Leases hold: surges a
// killed daemon left behind, and requests it never saw answered. It runs
// at the daemon's start and before each drain.
func (d *Drainer) RestoreSurges(ctx context.Context) error {
	if d.Surge.Namespace == "" {
		return nil
	}
	list, err := d.Client.Leases(d.Surge.Namespace).List(ctx, metav1.ListOptions{LabelSelector: surge.NodeLabel + "=" + d.NodeName,
		Limit: int64(surge.MaxSlots)})
	if err != nil {
		return fmt.Errorf("listing the surge slots of node %s: %w", d.NodeName, err)
	}
	log := d.logger(ctx)
	var errs []error
	for _, l := range list.Items {
		rec, err := surge.RecordOf(l)
		if err != nil || l.Annotations[surge.RaisedAnnotation] != "true" {
			// A request the controller never answered, or refused: it
			// raised nothing it would not undo itself at the delete.
			log.Info("Freeing a surge slot left behind", zap.String("lease", l.Name))
			errs = append(errs, d.freeSlot(ctx, l.Name))
			continue
		}
		log.Info("Putting back the replicas of a surge left behind", zap.String("workload", rec.Workload.String()),
			zap.Int32("from", rec.To), zap.Int32("to", rec.From))
		errs = append(errs, d.endSurge(ctx, log, rec))
	}
	return errors.Join(errs...)
}

// endSurge lowers a surge and tells of it (log, Event, metric).
func (d *Drainer) endSurge(ctx context.Context, log *zap.Logger, rec surge.Record) error {
	changed, err := d.lower(ctx, rec)
	if err != nil {
		log.Warn("Cannot put back the replicas of a surge; retried at the next drain or start",
			zap.String("workload", rec.Workload.String()), zap.Error(err))
		d.surgeEvent(rec.Workload, true, "DrainSurgeFailed", "Cannot put back the replicas of "+rec.Workload.String()+
			" after the drain of node "+d.NodeName+": "+err.Error())
		d.surgeCount("failed")
		return err
	}
	msg := fmt.Sprintf("Put the replicas of %s back to %d after evicting its pod from node %s", rec.Workload, rec.From, d.NodeName)
	if changed != "" {
		msg = "Surge of " + rec.Workload.String() + " for node " + d.NodeName + " ended: " + changed
	}
	log.Info("Surge ended", zap.String("workload", rec.Workload.String()), zap.String("changed", changed))
	d.surgeEvent(rec.Workload, changed != "", "DrainSurgeEnded", msg)
	d.surgeCount("lowered")
	return nil
}
