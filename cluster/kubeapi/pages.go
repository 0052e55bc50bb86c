package kubeapi

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PageSize is how many objects one page of a paginated LIST asks for.
const PageSize = 500

// TooManyError is a LIST stopped at its bound: objects others create (a
// tenant's PodDisruptionBudgets, the pods of a node) are read only up to
// a bound, so that no one can make the daemon or the controller read
// without end.
type TooManyError struct {
	What string
	Max  int
}

func (e *TooManyError) Error() string {
	return fmt.Sprintf("more than %d %s: not read (the bound of one list)", e.Max, e.What)
}

// Pages lists what opts select a page of PageSize at a time (Limit and
// Continue), calls each with every page and returns the first page's
// resourceVersion (every page is read at that version, so a watch may
// start there). More than max objects in all (max > 0) stop the list
// with a *TooManyError naming what; a continue token the server no longer
// has is an error too, never a fall-back to a whole list in one answer.
func Pages[L runtime.Object](ctx context.Context, list func(context.Context, metav1.ListOptions) (L, error),
	opts metav1.ListOptions, what string, max int, each func(L) error) (string, error) {
	opts.Limit, opts.Continue = PageSize, ""
	rv, n := "", 0
	for {
		page, err := list(ctx, opts)
		if err != nil {
			return "", err
		}
		acc, err := meta.ListAccessor(page)
		if err != nil {
			return "", fmt.Errorf("reading a page of %s: %w", what, err)
		}
		if rv == "" {
			rv = acc.GetResourceVersion()
		}
		if n += meta.LenList(page); max > 0 && n > max {
			return "", &TooManyError{What: what, Max: max}
		}
		if err := each(page); err != nil {
			return "", err
		}
		if opts.Continue = acc.GetContinue(); opts.Continue == "" {
			return rv, nil
		}
	}
}
