package kube_test

import (
	"testing"

	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/kube/kubetest"
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
			e := kube.NewEvents(kubetest.API(cs, nil), zaptest.NewLogger(t), "n1", "uid")
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
