package drain

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// --drain-last-selector: the pods it selects (a storage manager) are evicted
// only once every other pod of the node is gone, as the API server's watch
// of their deletions shows on the real bed.
func TestDrainLastSelectedGoLast(t *testing.T) {
	const name = "ordered"
	d := node(t, name)
	web, store := replicaSet(t, name, "web"), replicaSet(t, name, "store")
	for j := range 8 {
		createPod(t, name, fmt.Sprintf("web-%d", j), web)
	}
	createPod(t, name, "store-0", store)
	waitRunning(t, name, 9)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := client.CoreV1().Pods(name).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var deleted []string // in the order the API server deleted them
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Deleted {
				continue
			}
			if m, ok := ev.Object.(metav1.Object); ok {
				deleted = append(deleted, m.GetName())
				if len(deleted) == 9 {
					return
				}
			}
		}
	}()
	if d.Last, err = labels.Parse("app=store"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Cordon(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Drain(ctx, newProgressLog()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("deletions seen: %v", deleted)
	}
	if deleted[len(deleted)-1] != "store-0" {
		t.Errorf("pods deleted in the order %v, want store-0 last", deleted)
	}
}
