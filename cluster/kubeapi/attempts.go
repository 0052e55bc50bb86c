package kubeapi

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// AttemptsOf is r's List and Watch, each one attempt where r is the
// daemon's own client: client-go retries a GET that met a reset connection
// or a Retry-After answer up to 10 times, a second apart, out of the
// reconnect's sight. After an API server restart those retries were what
// reached the new server all at once while it started (half the fleet's
// watches in one second, each a token check against cold caches); a
// watch's attempts are the reflector's and the reconnect's to pace. Other
// implementations (client-go's typed clients, in tests) are used as they
// are.
func AttemptsOf[T Object, L runtime.Object](r Resource[T, L]) (
	func(context.Context, metav1.ListOptions) (L, error),
	func(context.Context, metav1.ListOptions) (watch.Interface, error),
) {
	if c, ok := r.(*client[T, L]); ok {
		once := *c
		once.once = true
		return once.List, once.Watch
	}
	return r.List, r.Watch
}
