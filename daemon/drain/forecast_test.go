package drain

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
)

func budgetFor(name, app string, allowed int32) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"},
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
}

// The forecast lists what the drain would do without touching anything:
// each pod with its budgets, the ones a budget at zero holds, the pods
// evicted last, what stays; pods no controller would recreate refuse it.
func TestForecast(t *testing.T) {
	web, db, store := ownedPod("web-0"), ownedPod("db-0"), ownedPod("store-0")
	web.Labels, db.Labels, store.Labels = map[string]string{"app": "web"}, map[string]string{"app": "db"}, map[string]string{"app": "store"}
	agent := ownedPod("agent")
	agent.OwnerReferences[0].Kind = "DaemonSet"
	cs := fake.NewClientset(web, db, store, agent, budgetFor("web", "web", 1), budgetFor("db", "db", 0))
	last, _ := labels.Parse("app=store")
	d := &Drainer{Client: kubetest.API(cs, nil), NodeName: "n1", Last: last}
	f, err := d.Forecast(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range f.Evict {
		got[p.Pod] = strings.Join(p.Budgets, ";") + "|" + p.BlockedBy
		if p.Last != (p.Pod == "apps/store-0") {
			t.Errorf("%s: last=%v", p.Pod, p.Last)
		}
	}
	if len(f.Evict) != 3 || f.Blocked != 1 || f.Skipped != 1 || f.Refused != "" {
		t.Errorf("forecast %+v, want 3 to evict, 1 blocked, 1 left", f)
	}
	if !strings.HasPrefix(got["apps/db-0"], "PodDisruptionBudget db allows 0 disruptions|PodDisruptionBudget db allows 0") {
		t.Errorf("db-0: %q", got["apps/db-0"])
	}
	if got["apps/web-0"] != "PodDisruptionBudget web allows 1 disruption|" {
		t.Errorf("web-0: %q", got["apps/web-0"])
	}
	if len(cs.Actions()) == 0 {
		t.Fatal("no requests")
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("the forecast sent a %s of %s; it must only read", a.GetVerb(), a.GetResource().Resource)
		}
	}
	// An unowned pod: the drain would not start.
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "apps"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	d.Client = kubetest.API(fake.NewClientset(web, bare), nil)
	if f, err := d.Forecast(context.Background()); err != nil || !strings.Contains(f.Refused, "apps/bare") {
		t.Errorf("with an unowned pod: %+v, %v", f, err)
	}
}

// The forecast's message groups the held pods by cause, as the drain's own
// progress does: the pods one budget holds are one part, each budget
// expanded ("needs N healthy, has M").
func TestWouldBlockGroups(t *testing.T) {
	objs := []runtime.Object{}
	for _, name := range []string{"web-2", "web-0", "db-0", "web-1"} {
		p := ownedPod(name)
		p.Labels = map[string]string{"app": strings.SplitN(name, "-", 2)[0]}
		objs = append(objs, p)
	}
	web, db := budgetFor("web", "web", 0), budgetFor("db", "db", 0)
	web.Status.DesiredHealthy, web.Status.CurrentHealthy = 3, 3
	objs = append(objs, web, db)
	d := &Drainer{Client: kubetest.API(fake.NewClientset(objs...), nil), NodeName: "n1"}
	got, err := d.WouldBlock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := "The drain could not finish now: pod apps/db-0: PodDisruptionBudget db allows 0 disruptions; " +
		"pods apps/web-0, apps/web-1, apps/web-2: PodDisruptionBudget web allows 0 disruptions (needs 3 healthy, has 3); " +
		"the update waits uncordoned until the budgets allow it"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
