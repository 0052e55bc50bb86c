package surge

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
)

// An owner reference is checked by the API server only for a name: a
// tenant's pod or ReplicaSet may name its controller with anything. Such a
// name is never read, and the refusal quotes it, cut.
func TestWorkloadOfRefusesOwnerNamesNoObjectHas(t *testing.T) {
	evil := "web\n\x1b[31mnodeconfd: all good" + strings.Repeat("x", 100)
	ctl := true
	owned := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: &ctl, UID: "u"}}
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", OwnerReferences: owned("Deployment", evil)}}
	client := kubetest.API(fake.NewClientset(rs), nil)
	for name, pod := range map[string]*corev1.Pod{
		"the pod's controller":        {ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop", OwnerReferences: owned("StatefulSet", evil)}},
		"the ReplicaSet's controller": {ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop", OwnerReferences: owned("ReplicaSet", "web-1")}},
	} {
		t.Run(name, func(t *testing.T) {
			_, why, err := workloadOf(context.Background(), client, pod)
			if err != nil || !strings.Contains(why, "not an object name") || strings.ContainsAny(why, "\n\x1b") || len(why) > 200 {
				t.Errorf("workloadOf = %q, %v; want a refusal quoting the name, cut", why, err)
			}
		})
	}
}
