package drain

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
)

// A namespace's PodDisruptionBudgets are a tenant's: the forecast reads them a page of
// kubeapi.PageSize at a time on the real API server (the budget that holds the pod is on the
// second page and is found), and stops past 1,000 with an error naming the bound rather than
// read them all.
func TestBudgetsReadByPages(t *testing.T) {
	const name = "pg"
	d := node(t, name)
	pages := &listLog{}
	d.Client = pagedAPI{d.Client, pages}
	web := replicaSet(t, name, "web")
	createPod(t, name, "web-a", web)
	waitRunning(t, name, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	others := func(from, to int) {
		t.Helper()
		zero := intstr.FromInt32(0)
		for i := from; i < to; i++ {
			if _, err := client.PolicyV1().PodDisruptionBudgets(name).Create(ctx, &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("a-%04d", i)},
				Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	others(0, kubeapi.PageSize+20)
	// Named after every other, so listed on the second page.
	budget(t, name, "web", 0, 0)
	msg, err := d.WouldBlock(ctx)
	if err != nil || !strings.Contains(msg, "pod pg/web-a: PodDisruptionBudget web allows 0 disruptions") {
		t.Fatalf("WouldBlock: %q, %v; want the pod held by budget web", msg, err)
	}
	if got := pages.take(); len(got) < 2 || got[0] != kubeapi.PageSize || got[1] != kubeapi.PageSize {
		t.Errorf("the budgets were listed with limits %v, want pages of %d", got, kubeapi.PageSize)
	}
	others(kubeapi.PageSize+20, 1000)
	if _, err := d.WouldBlock(ctx); err == nil || !strings.Contains(err.Error(), "more than 1000 PodDisruptionBudgets in namespace pg") {
		t.Errorf("WouldBlock over 1,000 budgets: %v, want the bound named", err)
	}
}

// pagedAPI records the limit of each LIST of PodDisruptionBudgets.
type pagedAPI struct {
	kubeapi.API
	log *listLog
}

func (p pagedAPI) PodDisruptionBudgets(ns string) kubeapi.Resource[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList] {
	return pagedBudgets{p.API.PodDisruptionBudgets(ns), p.log}
}

type pagedBudgets struct {
	kubeapi.Resource[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList]
	log *listLog
}

func (p pagedBudgets) List(ctx context.Context, o metav1.ListOptions) (*policyv1.PodDisruptionBudgetList, error) {
	p.log.add(o.Limit)
	return p.Resource.List(ctx, o)
}

type listLog struct {
	mu     sync.Mutex
	limits []int64
}

func (l *listLog) add(limit int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits = append(l.limits, limit)
}

func (l *listLog) take() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.limits
	l.limits = nil
	return out
}
