package drain

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
)

// Unit tests of the drain's loop on client-go's fake clientset, for what the
// real API server does not do on demand: a PodDisruptionBudget's Conflict or
// NotFound answer to an eviction, a watch that expires or ends. The same
// paths run on a real API server in test/drain.

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func ownedPod(name string) *corev1.Pod {
	yes := true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps", UID: types.UID("uid-" + name),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: "n1"}}
}

// fakeEvictions answers the evictions of a fake clientset: each answer in
// turn (nil: accepted, and the pod deleted when remove is set), then accepts.
type fakeEvictions struct {
	mu      sync.Mutex
	answers []error
	calls   int
	remove  bool
}

func (f *fakeEvictions) install(cs *fake.Clientset) {
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		f.mu.Lock()
		var err error
		if f.calls < len(f.answers) {
			err = f.answers[f.calls]
		}
		f.calls++
		remove := f.remove
		f.mu.Unlock()
		if err != nil {
			return true, nil, err
		}
		if remove {
			name := a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
			if derr := cs.Tracker().Delete(podsGVR, "apps", name); derr != nil {
				return true, nil, derr
			}
		}
		return true, nil, nil
	})
}

func (f *fakeEvictions) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type nopProgress struct{}

func (nopProgress) Progress(string) {}
func (nopProgress) Blocked(string)  {}

// An eviction answered with the PodDisruptionBudget's Conflict (its status
// update lost to concurrent evictions) or NotFound (deleted meanwhile) while
// the pod still runs is retried; the drain does not end before the pod goes.
func TestDrainRetriesBudgetConflictAndNotFound(t *testing.T) {
	pdbs := schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}
	for name, answer := range map[string]error{
		"conflict":  apierrors.NewConflict(pdbs, "web", errors.New("the object has been modified")),
		"not found": apierrors.NewNotFound(pdbs, "web"),
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(ownedPod("web-0"))
			ev := &fakeEvictions{answers: []error{answer}, remove: true}
			ev.install(cs)
			d := &Drainer{Client: kubetest.API(cs, nil), NodeName: "n1", Log: zap.NewNop()}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			res, err := d.Drain(ctx, nopProgress{})
			if err != nil {
				t.Fatal(err)
			}
			if n := ev.count(); n != 2 {
				t.Errorf("%d evictions, want 2 (the refused one retried)", n)
			}
			if took := time.Since(start); took < retryFirst || res.Blocked <= 0 {
				t.Errorf("drain took %s, blocked %s: want the retry after %s, counted as blocked", took, res.Blocked, retryFirst)
			}
		})
	}
}

// scriptedWatch hands out the drain's pod watches: the first ones are
// FakeWatchers the test drives, the later ones the fake clientset's own.
type scriptedWatch struct {
	mu sync.Mutex
	// watchers answer the watch calls in turn; a nil one fails the call.
	watchers []*watch.FakeWatcher
	opts     []metav1.ListOptions
	lists    int
}

func (s *scriptedWatch) install(cs *fake.Clientset) {
	cs.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.opts = append(s.opts, a.(k8stesting.WatchActionImpl).ListOptions)
		if n := len(s.opts); n <= len(s.watchers) {
			if s.watchers[n-1] == nil {
				return true, nil, errors.New("connection refused")
			}
			return true, s.watchers[n-1], nil
		}
		return false, nil, nil
	})
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		s.lists++
		s.mu.Unlock()
		return false, nil, nil
	})
}

func (s *scriptedWatch) state() (int, []metav1.ListOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists, append([]metav1.ListOptions(nil), s.opts...)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A bookmark is not a pod: it moves the resourceVersion on and nothing
// else. A watch the server ends is resumed from that version (no list); a
// watch that fails with 410 Gone (the version expired) lists the pods again,
// which finds the pods deleted meanwhile gone.
func TestDrainWatchBookmarkEndAndExpiry(t *testing.T) {
	cs := fake.NewClientset(ownedPod("web-0"), ownedPod("web-1"))
	ev := &fakeEvictions{} // accepted; the pods stay until the test deletes them
	ev.install(cs)
	first, second := watch.NewFakeWithChanSize(4, false), watch.NewFakeWithChanSize(4, false)
	sw := &scriptedWatch{watchers: []*watch.FakeWatcher{first, second}}
	sw.install(cs)
	core, logs := observer.New(zap.DebugLevel)
	d := &Drainer{Client: kubetest.API(cs, nil), NodeName: "n1", Log: zap.New(core)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := d.Drain(ctx, nopProgress{})
		done <- err
	}()
	waitUntil(t, "both evictions", func() bool { return ev.count() == 2 })

	// A bookmark, then the server ends the watch.
	first.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "77"}})
	first.Stop()
	waitUntil(t, "the resumed watch", func() bool { _, o := sw.state(); return len(o) == 2 })
	lists, opts := sw.state()
	if lists != 1 || opts[1].ResourceVersion != "77" || opts[1].AllowWatchBookmarks {
		t.Errorf("after the watch ended: %d lists (want 1), resumed with %+v (want from 77, no bookmarks)", lists, opts[1])
	}
	if n := logs.FilterMessageSnippet("arrived").Len(); n != 0 {
		t.Errorf("a bookmark was taken for an arrived pod: %v", logs.FilterMessageSnippet("arrived").All())
	}

	// The pods go while nobody watches, and the watch expires.
	for _, n := range []string{"web-0", "web-1"} {
		if err := cs.Tracker().Delete(podsGVR, "apps", n); err != nil {
			t.Fatal(err)
		}
	}
	second.Error(&apierrors.NewResourceExpired("too old resource version: 77 (90)").ErrStatus)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("drain did not list again after the watch expired")
	}
	if lists, _ := sw.state(); lists != 2 {
		t.Errorf("%d lists, want 2 (the first, and one after the 410)", lists)
	}
	if !strings.Contains(logs.All()[len(logs.All())-1].Message, "Drained node") {
		t.Errorf("last log %q", logs.All()[len(logs.All())-1].Message)
	}
}

// A watch that cannot be reopened (the API server is down) is retried with
// backoff; the drain goes on and ends when the pods are gone.
func TestDrainWatchReopenedAfterFailures(t *testing.T) {
	cs := fake.NewClientset(ownedPod("web-0"))
	ev := &fakeEvictions{}
	ev.install(cs)
	first, last := watch.NewFakeWithChanSize(4, false), watch.NewFakeWithChanSize(4, false)
	sw := &scriptedWatch{watchers: []*watch.FakeWatcher{first, nil, nil, last}}
	sw.install(cs)
	core, logs := observer.New(zap.DebugLevel)
	d := &Drainer{Client: kubetest.API(cs, nil), NodeName: "n1", Log: zap.New(core)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := d.Drain(ctx, nopProgress{})
		done <- err
	}()
	waitUntil(t, "the eviction", func() bool { return ev.count() == 1 })
	first.Stop()
	select {
	case err := <-done:
		t.Fatalf("drain ended while the watch was down: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, o := sw.state(); len(o) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch was not reopened after two failures")
		}
	}
	if n := logs.FilterMessageSnippet("could not be reopened").Len(); n != 2 {
		t.Errorf("%d logged reopen failures, want 2", n)
	}
	if err := cs.Tracker().Delete(podsGVR, "apps", "web-0"); err != nil {
		t.Fatal(err)
	}
	last.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("drain did not end once the pod was gone")
	}
}

// With Last set, the pods it selects are evicted only once every other pod
// of the drain is gone: a storage manager outlives the pods that use it.
func TestDrainEvictsLastSelectedLast(t *testing.T) {
	store := ownedPod("store-0")
	store.Labels = map[string]string{"app": "store"}
	cs := fake.NewClientset(ownedPod("web-0"), store, ownedPod("web-1"))
	var mu sync.Mutex
	var order []string
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		name := a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		return true, nil, cs.Tracker().Delete(podsGVR, "apps", name)
	})
	last, err := labels.Parse("app=store")
	if err != nil {
		t.Fatal(err)
	}
	d := &Drainer{Client: kubetest.API(cs, nil), NodeName: "n1", Log: zap.NewNop(), Last: last}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := d.Drain(ctx, nopProgress{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 3 || order[2] != "store-0" {
		t.Errorf("evictions in the order %v, want store-0 last", order)
	}
}
