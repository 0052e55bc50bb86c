package surge

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/names"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Granter is nodeconfd controller's half of the drain's surge: the only
// writer of a surged workload's replicas. It answers each slot Lease a
// daemon creates, which names one pod, and grants the surge only when
//
//   - the Lease's node is draining: cordoned by nodeconfd (spec.unschedulable
//     and the cordonedBy annotation),
//   - the pod exists and runs on that node,
//   - its owner opted in and may be surged (the daemon's own rules:
//     refusal), and
//   - no other slot holds a surge of the same owner.
//
// It then records the owner and its replica count in the Lease, with a
// finalizer, raises the count by one (a JSON patch that tests the count)
// and marks the Lease raised. Whenever the Lease is deleted, or its node
// no longer drains, it puts the count back (unless someone else changed
// it meanwhile) and lets the Lease go. The daemon's token has no right to
// change any workload: the count moves only between the one recorded and
// one more, for the owner of a pod on a draining node.
type Granter struct {
	Client kubeapi.API
	// Namespace holds the slot Leases (the daemons' namespace).
	Namespace string
	Log       *zap.Logger
}

// Decide answers one slot Lease, as the caches show it: node is the Node
// it names (nil when there is none). It is safe to call again at any time.
func (g *Granter) Decide(ctx context.Context, l *coordinationv1.Lease, node *corev1.Node) error {
	nodeName := l.Labels[NodeLabel]
	if !strings.HasPrefix(l.Name, LeasePrefix) || nodeName == "" {
		return nil
	}
	rec, rerr := RecordOf(*l)
	held := slices.Contains(l.Finalizers, Finalizer)
	draining := isDraining(node)
	deleting := l.DeletionTimestamp != nil
	if held && !deleting && !draining {
		// Ending a surge the daemon still holds: the Node as the API
		// server has it, not as a cache a moment behind the cordon may.
		n, err := g.Client.Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading node %s of surge slot %s: %w", nodeName, l.Name, err)
		}
		draining = err == nil && isDraining(n)
	}
	switch {
	case held && rerr == nil && (deleting || !draining):
		return g.end(ctx, l, rec, deleting)
	case held && rerr != nil:
		// Not a record the controller wrote: nothing it could undo.
		return g.release(ctx, l, deleting)
	case deleting || l.Annotations[RefusedAnnotation] != "" || l.Annotations[RaisedAnnotation] == "true":
		return nil
	case held:
		return g.finishRaise(ctx, l, rec)
	}
	w, why, err := g.check(ctx, l, nodeName, draining)
	if err != nil {
		return err
	}
	if why != "" {
		g.Log.Info("Surge refused", zap.String("lease", l.Name), zap.String("node", nodeName), zap.String("why", why))
		return g.answer(ctx, l, map[string]string{RefusedAnnotation: why}, false)
	}
	return g.grant(ctx, l, w)
}

// isDraining says whether nodeconfd cordoned the node: the daemon cordons
// before it drains and uncordons after.
func isDraining(node *corev1.Node) bool {
	return node != nil && node.Spec.Unschedulable && node.Annotations[names.CordonedBy] != ""
}

// check decides a request: the owner to surge, or why not.
func (g *Granter) check(ctx context.Context, l *coordinationv1.Lease, nodeName string, draining bool) (w Workload, why string, err error) {
	if !draining {
		return w, "node " + nodeName + " is not draining (not cordoned by nodeconfd)", nil
	}
	ns, name, ok := strings.Cut(l.Annotations[PodAnnotation], "/")
	if !ok || ns == "" || name == "" {
		return w, "the Lease names no pod (annotation " + PodAnnotation + ": namespace/name)", nil
	}
	pod, err := g.Client.Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return w, fmt.Sprintf("pod %q does not exist", ns+"/"+name), nil
	}
	if err != nil {
		return w, "", fmt.Errorf("reading pod %s/%s of surge slot %s: %w", ns, name, l.Name, err)
	}
	if pod.Spec.NodeName != nodeName {
		return w, fmt.Sprintf("pod %s/%s runs on node %q, not on node %s", ns, name, pod.Spec.NodeName, nodeName), nil
	}
	w, quiet, why, err := Surgeable(ctx, g.Client, pod)
	switch {
	case err != nil:
		return w, "", err
	case quiet:
		return w, "the owner of pod " + ns + "/" + name + " did not opt in to surges, or has none to scale", nil
	case why != "":
		return w, why, nil
	}
	// The slots as the API server has them, not as a cache may (a grant
	// a moment ago must count): at most MaxSlots small objects.
	slots, err := g.Client.Leases(g.Namespace).List(ctx, metav1.ListOptions{LabelSelector: NodeLabel,
		Limit: int64(MaxSlots)})
	if err != nil {
		return w, "", fmt.Errorf("listing the surge slots: %w", err)
	}
	for _, o := range slots.Items {
		if o.Name != l.Name && o.Annotations[WorkloadAnnotation] == workloadKey(w) && o.Annotations[RefusedAnnotation] == "" {
			return w, fmt.Sprintf("%s is surged already, for node %s (Lease %s)", w, o.Labels[NodeLabel], o.Name), nil
		}
	}
	return w, "", nil
}

func workloadKey(w Workload) string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

// grant records the surge in the Lease (and holds it with the finalizer),
// then raises the replicas and says so: a controller killed between the
// two finds the record (finishRaise).
func (g *Granter) grant(ctx context.Context, l *coordinationv1.Lease, w Workload) error {
	l = l.DeepCopy()
	l.Finalizers = append(l.Finalizers, Finalizer)
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[WorkloadAnnotation], l.Annotations[UIDAnnotation] = workloadKey(w), string(w.UID)
	l.Annotations[FromAnnotation], l.Annotations[ToAnnotation] = strconv.Itoa(int(w.Replicas)), strconv.Itoa(int(w.Replicas+1))
	if w.Scaled() {
		l.Annotations[APIAnnotation] = w.APIVersion + " " + w.Resource
	}
	name := l.Name
	l, err := g.Client.Leases(g.Namespace).Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("recording the surge of %s in Lease %s/%s: %w", w, g.Namespace, name, err)
	}
	rec, err := RecordOf(*l)
	if err != nil {
		return err
	}
	return g.finishRaise(ctx, l, rec)
}

// finishRaise raises a recorded surge's replicas, unless they are raised
// already, and marks the Lease raised; a count neither recorded one is
// refused and the Lease released.
func (g *Granter) finishRaise(ctx context.Context, l *coordinationv1.Lease, rec Record) error {
	cur, err := CurrentReplicas(ctx, g.Client, rec.Workload)
	raised := false
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return err
	case err == nil && cur == rec.From:
		err, raised = setReplicas(ctx, g.Client, rec.Workload, rec.From, rec.To), true
	case err == nil && cur != rec.To:
		err = fmt.Errorf("%s has %d replicas, not the %d recorded", rec.Workload, cur, rec.From)
	}
	if err != nil {
		g.Log.Info("Surge not raised", zap.String("lease", l.Name), zap.String("workload", rec.Workload.String()), zap.Error(err))
		return g.answer(ctx, l, map[string]string{RefusedAnnotation: "raising the replicas: " + err.Error()}, true)
	}
	if raised { // (else a cache behind the answer: raised already)
		g.Log.Info("Surged a workload for a node's drain", zap.String("lease", l.Name), zap.String("node", l.Labels[NodeLabel]),
			zap.String("workload", rec.Workload.String()), zap.Int32("from", rec.From), zap.Int32("to", rec.To))
	}
	return g.answer(ctx, l, map[string]string{RaisedAnnotation: "true"}, false)
}

// answer writes annotations on the Lease; release also drops the
// finalizer (nothing raised to undo).
func (g *Granter) answer(ctx context.Context, l *coordinationv1.Lease, ann map[string]string, release bool) error {
	l = l.DeepCopy()
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	for k, v := range ann {
		l.Annotations[k] = v
	}
	if release {
		l.Finalizers = slices.DeleteFunc(l.Finalizers, func(f string) bool { return f == Finalizer })
	}
	if _, err := g.Client.Leases(g.Namespace).Update(ctx, l, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("answering surge slot %s/%s: %w", g.Namespace, l.Name, err)
	}
	return nil
}

// end puts a surge's replicas back, unless someone else changed them
// since, and lets the Lease go (deleting it when its node stopped draining
// first).
func (g *Granter) end(ctx context.Context, l *coordinationv1.Lease, rec Record, deleting bool) error {
	cur, err := CurrentReplicas(ctx, g.Client, rec.Workload)
	left := ""
	switch {
	case apierrors.IsNotFound(err):
		left = "gone"
	case err != nil:
		return err
	case cur == rec.To:
		if err := setReplicas(ctx, g.Client, rec.Workload, rec.To, rec.From); err != nil {
			return err
		}
	default:
		left = fmt.Sprintf("changed by someone else to %d; left as they are", cur)
	}
	why := "the daemon freed its slot"
	if !deleting {
		why = "node " + l.Labels[NodeLabel] + " no longer drains"
	}
	g.Log.Info("Surge ended", zap.String("lease", l.Name), zap.String("workload", rec.Workload.String()),
		zap.Int32("to", rec.From), zap.String("why", why), zap.String("replicas", left))
	return g.release(ctx, l, deleting)
}

// release drops the finalizer, and deletes the Lease unless its delete is
// under way.
func (g *Granter) release(ctx context.Context, l *coordinationv1.Lease, deleting bool) error {
	if err := g.answer(ctx, l, nil, true); err != nil {
		return err
	}
	if deleting {
		return nil
	}
	err := g.Client.Leases(g.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting surge slot %s/%s: %w", g.Namespace, l.Name, err)
	}
	return nil
}
