package kube_test

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap/zaptest"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// The daemon's own API client (NewAPI) and Events recorder against a real
// kube-apiserver and etcd, with the repository's CRDs.
func TestAPIOnAPIServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (the test bed's control plane)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	api, err := kubeapi.NewAPI(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ContentTypes", func(t *testing.T) { contentTypes(ctx, t, cp) })

	t.Run("CountNodes", func(t *testing.T) {
		nodes := api.Nodes()
		for _, name := range []string{"count-1", "count-2", "count-3"} {
			if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		c := &kube.Client{API: api, NodeName: "count-1"}
		n, err := c.CountNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, err := nodes.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n != len(all.Items) || n < 3 {
			t.Fatalf("CountNodes = %d, a full list has %d", n, len(all.Items))
		}
	})

	t.Run("ClusterScoped", func(t *testing.T) {
		nodes := api.Nodes()
		if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		list, err := nodes.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "n1").String()})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "n1" {
			t.Fatalf("list by name: %d items %v", len(list.Items), list.Items)
		}
		w, err := nodes.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion,
			FieldSelector: fields.OneTermEqualSelector("metadata.name", "n1").String()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		n, err := nodes.Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels = map[string]string{"a": "1"}
		if n, err = nodes.Update(ctx, n, metav1.UpdateOptions{}); err != nil || n.Labels["a"] != "1" {
			t.Fatalf("update: %v %v", n.Labels, err)
		}
		n.ResourceVersion = "1" // stale
		if _, err := nodes.Update(ctx, n, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("stale update: want Conflict, got %v", err)
		}
		if n, err = nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`),
			metav1.PatchOptions{}); err != nil || !n.Spec.Unschedulable {
			t.Fatalf("patch: %v %v", n.Spec.Unschedulable, err)
		}
		for _, want := range []string{"a", "unschedulable"} {
			select {
			case ev := <-w.ResultChan():
				got := ev.Object.(*corev1.Node)
				if ev.Type != watch.Modified || got.Name != "n1" {
					t.Fatalf("watch: %s %s", ev.Type, got.Name)
				}
				if want == "unschedulable" && !got.Spec.Unschedulable {
					t.Fatalf("watch: second change is not the patch")
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("watch: no event for the %s change", want)
			}
		}
		if err := nodes.Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := nodes.Get(ctx, "n2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("get after delete: want NotFound, got %v", err)
		}
	})

	t.Run("StatusSubresource", func(t *testing.T) {
		mcns := api.MachineConfigNodes()
		mcn := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Spec: mcfgv1.MachineConfigNodeSpec{Node: mcfgv1.MCOObjectReference{Name: "n1"},
				Pool:          mcfgv1.MCOObjectReference{Name: "worker"},
				ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: "rendered-1"}}}
		if _, err := mcns.Create(ctx, mcn, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		patch := `{"status":{"observedGeneration":1,"conditions":[{"type":"Updated","status":"True","reason":"Updated",` +
			`"message":"done","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
		out, err := mcns.Patch(ctx, "n1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Status.Conditions) != 1 || out.Status.Conditions[0].Type != "Updated" {
			t.Fatalf("status patch: %+v", out.Status)
		}
		if _, err := api.MachineConfigs().Get(ctx, "rendered-none", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("get a missing MachineConfig: want NotFound, got %v", err)
		}
	})

	t.Run("NamespacedAndEviction", func(t *testing.T) {
		const ns = "kube-test"
		if _, err := api.Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err) // a namespace that does not exist lists nothing
		}
		leases := api.Leases(metav1.NamespaceDefault)
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l1"}}
		if _, err := leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := leases.Create(ctx, l, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second create: want AlreadyExists, got %v", err)
		}
		pods := api.Pods(metav1.NamespaceDefault)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if p, err = pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := api.Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: p.Namespace},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}}); err != nil {
			t.Fatal(err)
		}
		// An unscheduled pod is deleted at once.
		if _, err := pods.Get(ctx, "p1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("get after eviction: want NotFound, got %v", err)
		}
		if err := api.Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: p.Namespace}}); !apierrors.IsNotFound(err) {
			t.Fatalf("evicting a missing pod: want NotFound, got %v", err)
		}
	})

	t.Run("Events", func(t *testing.T) {
		events := kubeapi.NewEvents(api, zaptest.NewLogger(t), "ev-node", "mcn-uid")
		events.Event(true, true, "UpdateFailed", "Error: x")
		events.Event(true, true, "UpdateFailed", "Error: x")
		events.Event(true, true, "UpdateFailed", "Error: x")
		events.Event(false, false, "Drained", "Drained 2 pods")
		events.Shutdown()
		events.Event(false, false, "Late", "dropped after shutdown")

		list, err := api.Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name != "ev-node" {
				continue
			}
			if e.Source.Component != "nodeconfd" || e.Source.Host != "ev-node" ||
				e.ReportingController != "nodeconfd" || e.ReportingInstance != "ev-node" {
				t.Errorf("event %s: source %+v, reporting %s/%s", e.Name, e.Source, e.ReportingController, e.ReportingInstance)
			}
			if e.LastTimestamp.Before(&e.FirstTimestamp) {
				t.Errorf("event %s: last %v before first %v", e.Name, e.LastTimestamp, e.FirstTimestamp)
			}
			got = append(got, strings.Join([]string{e.InvolvedObject.Kind, string(e.InvolvedObject.UID), e.Type,
				e.Reason, e.Message, strconv.Itoa(int(e.Count))}, "|"))
		}
		want := map[string]bool{
			"MachineConfigNode|mcn-uid|Warning|UpdateFailed|Error: x|3": true,
			"Node|ev-node|Warning|UpdateFailed|Error: x|3":              true,
			"MachineConfigNode|mcn-uid|Normal|Drained|Drained 2 pods|1": true,
		}
		if len(got) != len(want) {
			t.Fatalf("events: got %q, want %v", got, want)
		}
		for _, g := range got {
			if !want[g] {
				t.Fatalf("events: got %q, want %v", got, want)
			}
		}
	})

	// Last: it restarts the API server.
	t.Run("ReadinessAcrossRestart", func(t *testing.T) { readinessAcrossRestart(ctx, t, cp) })
}

// contentTypes: the daemon reads and watches Kubernetes' own types in
// protobuf, its custom resources in JSON (the API server encodes them
// only so).
func contentTypes(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane) {
	var mu sync.Mutex
	seen := map[string]string{}
	rc := cp.RestConfig()
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				mu.Lock()
				seen[r.Method+" "+r.URL.Path] = resp.Header.Get("Content-Type")
				mu.Unlock()
			}
			return resp, err
		})
	}
	api, err := kubeapi.NewAPI(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "pb"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Nodes().Patch(ctx, "pb", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`),
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Leases("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.MachineConfigNodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := api.Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=pb"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-w.ResultChan(); ev.Type != watch.Added {
		t.Fatalf("watch of nodes in protobuf: first event %v %v", ev.Type, ev.Object)
	}
	w.Stop()
	mu.Lock()
	defer mu.Unlock()
	for req, want := range map[string]string{
		"POST /api/v1/nodes":     "application/vnd.kubernetes.protobuf",
		"PATCH /api/v1/nodes/pb": "application/vnd.kubernetes.protobuf",
		"GET /apis/coordination.k8s.io/v1/namespaces/default/leases": "application/vnd.kubernetes.protobuf",
		"GET /api/v1/nodes": "application/vnd.kubernetes.protobuf;stream=watch",
		"GET /apis/machineconfiguration.openshift.io/v1/machineconfignodes": "application/json",
	} {
		if got := seen[req]; got != want {
			t.Errorf("%s: response Content-Type %q, want %q (all: %v)", req, got, want, seen)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}
