package kubeapi_test

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
)

// A write the API server refuses for a while is retried; one it forbids is
// not.
func TestEventsRetry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		failures    int
		wantCreates int
		wantEvents  int
	}{
		{"TimeoutOnce", apierrors.NewServerTimeout(corev1.Resource("events"), "create", 1), 1, 2, 1},
		{"TimeoutAlways", apierrors.NewServerTimeout(corev1.Resource("events"), "create", 1), 99, 3, 0},
		{"Forbidden", apierrors.NewForbidden(corev1.Resource("events"), "x", nil), 99, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			creates := 0
			cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
				creates++
				if creates <= tc.failures {
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			e := kubeapi.NewEvents(kubetest.API(cs, nil), zaptest.NewLogger(t), "n1", "uid")
			e.Event(false, true, "UpdateFailed", "Error: x")
			e.Shutdown()
			if creates != tc.wantCreates {
				t.Errorf("creates: got %d, want %d", creates, tc.wantCreates)
			}
			list, err := cs.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != tc.wantEvents {
				t.Errorf("events: got %d, want %d", len(list.Items), tc.wantEvents)
			}
		})
	}
}

// A create whose answer was lost (the API server made the Event) is not
// made twice; a repeat of an Event that is gone is written anew at once.
func TestEventsLostAnswerAndGoneEvent(t *testing.T) {
	cs := fake.NewClientset()
	lost := true
	cs.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !lost {
			return false, nil, nil
		}
		lost = false
		if err := cs.Tracker().Add(a.(k8stesting.CreateAction).GetObject()); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewServerTimeout(corev1.Resource("events"), "create", 1)
	})
	e := kubeapi.NewEvents(kubetest.API(cs, nil), zaptest.NewLogger(t), "n1", "uid")
	e.Event(false, true, "UpdateFailed", "Error: x")
	e.Shutdown()
	list, err := cs.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Count != 1 {
		t.Fatalf("after a lost answer: %d events %+v", len(list.Items), list.Items)
	}

	// The first Event of n2 expires (the API server deletes it) before its
	// repeat: the repeat's patch finds nothing, and the repeat is created
	// at once, not after a retry.
	var patches, creates int
	cs.PrependReactor("patch", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		patches++
		return true, nil, apierrors.NewNotFound(corev1.Resource("events"), "gone")
	})
	cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		return false, nil, nil
	})
	start := time.Now() // a retry would wait a whole second in this span
	e = kubeapi.NewEvents(kubetest.API(cs, nil), zaptest.NewLogger(t), "n2", "uid2")
	e.Event(false, true, "UpdateFailed", "Error: y")
	e.Event(false, true, "UpdateFailed", "Error: y")
	e.Shutdown()
	if patches != 1 || creates != 2 {
		t.Errorf("patches %d, creates %d: want the repeat's one patch, then its create", patches, creates)
	}
	if took := time.Since(start); took >= time.Second {
		t.Errorf("the repeat of a gone Event waited %s: it should be created at once", took)
	}
	list, err = cs.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=n2"})
	if err != nil {
		t.Fatal(err)
	}
	n2 := 0
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == "n2" {
			n2++
		}
	}
	if n2 != 2 {
		t.Fatalf("events of n2: %d, want 2 (the first, and the repeat written anew)", n2)
	}
}
