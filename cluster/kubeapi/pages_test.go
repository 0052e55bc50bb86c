package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pages asks for pages of PageSize, follows the continue token, returns
// the first page's resourceVersion, and stops past its bound.
func TestPages(t *testing.T) {
	const total = 2*PageSize + 7
	var asked []metav1.ListOptions
	list := func(_ context.Context, o metav1.ListOptions) (*corev1.PodList, error) {
		asked = append(asked, o)
		start := 0
		if o.Continue != "" {
			fmt.Sscan(o.Continue, &start)
		}
		l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(100 + len(asked))}}
		for i := start; i < total && i < start+int(o.Limit); i++ {
			l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}})
		}
		if start+int(o.Limit) < total {
			l.Continue = fmt.Sprint(start + int(o.Limit))
		}
		return l, nil
	}
	var got int
	rv, err := Pages(context.Background(), list, metav1.ListOptions{FieldSelector: "spec.nodeName=n"}, "pods", 0,
		func(l *corev1.PodList) error { got += len(l.Items); return nil })
	if err != nil || got != total || rv != "101" || len(asked) != 3 {
		t.Fatalf("%d pods at %s in %d pages, %v; want %d at 101 in 3", got, rv, len(asked), err, total)
	}
	for _, o := range asked {
		if o.Limit != PageSize || o.FieldSelector != "spec.nodeName=n" {
			t.Errorf("a page asked with %+v", o)
		}
	}
	asked, got = nil, 0
	_, err = Pages(context.Background(), list, metav1.ListOptions{}, "pods", PageSize+1,
		func(l *corev1.PodList) error { got += len(l.Items); return nil })
	var tooMany *TooManyError
	if !errors.As(err, &tooMany) || len(asked) != 2 || got != PageSize {
		t.Errorf("bounded at %d: %v after %d pages, %d pods read", PageSize+1, err, len(asked), got)
	}
}
