package drain

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/test/testbed/kubelet"
)

// node starts a stand-in kubelet for a new node (30s grace periods last
// 0.3s) and a namespace named after it, and returns a drainer for it.
func node(t *testing.T, name string) *drain.Drainer {
	t.Helper()
	ctx := context.Background()
	k, err := kubelet.Start(ctx, client, name, kubelet.Options{GracePeriodScale: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &drain.Drainer{Client: kubetest.API(client, nil), NodeName: name, Log: zaptest.NewLogger(t)}
}

// owner is a controller object the test created (no controller runs).
type owner struct {
	apiVersion, kind, name string
	uid                    types.UID
	// app is the app label of the owner's pods.
	app string
}

func replicaSet(t *testing.T, ns, name string) owner {
	t.Helper()
	labels := map[string]string{"app": name}
	dep, err := client.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template(labels)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	rs, err := client.AppsV1().ReplicaSets(ns).Create(context.Background(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-5d8f", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return owner{"apps/v1", "ReplicaSet", rs.Name, rs.UID, name}
}

func statefulSet(t *testing.T, ns, name string) owner {
	t.Helper()
	labels := map[string]string{"app": name}
	ss, err := client.AppsV1().StatefulSets(ns).Create(context.Background(), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels),
			ServiceName: name},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return owner{"apps/v1", "StatefulSet", ss.Name, ss.UID, name}
}

func daemonSet(t *testing.T, ns, name string) owner {
	t.Helper()
	labels := map[string]string{"app": name}
	ds, err := client.AppsV1().DaemonSets(ns).Create(context.Background(), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return owner{"apps/v1", "DaemonSet", ds.Name, ds.UID, name}
}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/app"}}}}
}

// podSpec adjusts a pod before it is created.
type podSpec func(*corev1.Pod)

func withEmptyDir(p *corev1.Pod) {
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
}

// createPod creates a pod bound to the node, owned by o (none when o.kind
// is ""), labelled app=<o.app>, or app=<name> when unowned.
func createPod(t *testing.T, nodeName, name string, o owner, mods ...podSpec) *corev1.Pod {
	t.Helper()
	app := o.app
	if app == "" {
		app = name
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nodeName, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "example.com/app"}}},
	}
	if o.kind != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: o.apiVersion, Kind: o.kind, Name: o.name,
			UID: o.uid, Controller: &yes}}
	}
	for _, m := range mods {
		m(p)
	}
	out, err := client.CoreV1().Pods(nodeName).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitRunning waits until the kubelet reports every pod of the node Ready.
func waitRunning(t *testing.T, nodeName string, want int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			pods := podsOn(t, nodeName)
			ready := 0
			for _, p := range pods {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			return ready == want && len(pods) == want, nil
		})
	if err != nil {
		t.Fatalf("waiting for %d pods to run on %s: %v", want, nodeName, err)
	}
}

func podsOn(t *testing.T, nodeName string) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", nodeName).String()})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func podNames(pods []corev1.Pod) string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return strings.Join(names, ",")
}

// budget creates a PodDisruptionBudget of maxUnavailable over app=<app>
// and waits until the control plane's disruption loop allows wantAllowed
// disruptions.
func budget(t *testing.T, ns, app string, maxUnavailable int32, wantAllowed int32) {
	t.Helper()
	mu := intstr.FromInt32(maxUnavailable)
	budgetOf(t, ns, app, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &mu}, wantAllowed)
}

// budgetOf creates a PodDisruptionBudget of spec over app=<app> and waits
// until the control plane's disruption loop allows wantAllowed disruptions.
func budgetOf(t *testing.T, ns, app string, spec policyv1.PodDisruptionBudgetSpec, wantAllowed int32) {
	t.Helper()
	ctx := context.Background()
	spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pdb, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, app, metav1.GetOptions{})
		return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DisruptionsAllowed == wantAllowed &&
			pdb.Status.ExpectedPods > 0, err
	})
	if err != nil {
		t.Fatalf("waiting for budget %s/%s to allow %d disruptions: %v", ns, app, wantAllowed, err)
	}
}

// progressLog records what a drain reports.
type progressLog struct {
	mu              sync.Mutex
	progress, block []string
	changed         chan struct{}
}

func newProgressLog() *progressLog { return &progressLog{changed: make(chan struct{}, 1)} }

func (p *progressLog) Progress(msg string) { p.add(&p.progress, msg) }
func (p *progressLog) Blocked(msg string)  { p.add(&p.block, msg) }

func (p *progressLog) add(to *[]string, msg string) {
	p.mu.Lock()
	*to = append(*to, msg)
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *progressLog) messages() (progress, blocked []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.progress...), append([]string(nil), p.block...)
}

// waitFor waits for a progress message that holds every one of want.
func (p *progressLog) waitFor(ctx context.Context, want ...string) (string, error) {
	for {
		msgs, blocked := p.messages()
		for _, m := range append(msgs, blocked...) {
			if containsAll(m, want) {
				return m, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no progress message with %q; got %q", want, msgs)
		case <-p.changed:
		}
	}
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// evictions wraps the real API to watch the drainer's evictions: how many
// are in flight at once, and what the API server answered. before, when
// set, runs ahead of each eviction request.
type evictions struct {
	kubeapi.API
	before func(ev *policyv1.Eviction)
	delay  time.Duration

	mu            sync.Mutex
	inFlight, max int
	answers       map[string][]error
}

func (e *evictions) Evict(ctx context.Context, ev *policyv1.Eviction) error {
	e.mu.Lock()
	e.inFlight++
	e.max = max(e.max, e.inFlight)
	e.mu.Unlock()
	if e.before != nil {
		e.before(ev)
	}
	time.Sleep(e.delay)
	err := e.API.Evict(ctx, ev)
	e.mu.Lock()
	e.inFlight--
	if e.answers == nil {
		e.answers = map[string][]error{}
	}
	e.answers[ev.Name] = append(e.answers[ev.Name], err)
	e.mu.Unlock()
	return err
}

func (e *evictions) most() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.max
}

func (e *evictions) answersFor(name string) []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.answers[name]...)
}
