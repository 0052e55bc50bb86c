package kubeapi

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Object is what every API object nodeconfd handles is.
type Object interface {
	runtime.Object
	metav1.Object
}

// client is one resource's typed client over its group's REST client: the
// requests client-go's generated typed clients make, with the same
// signatures. It is written here rather than taken from client-go's gentype
// because gentype also holds the fake clients, whose imports (strategic merge
// patch, managed fields, OpenAPI models, YAML) cost the daemon about 1.4 MB of
// binary and, on every node, about 1 MiB of idle memory.
type client[T Object, L runtime.Object] struct {
	rest      rest.Interface
	params    runtime.ParameterCodec
	resource  string
	namespace string // "" for cluster-scoped resources
	newT      func() T
	newL      func() L
	// once makes each List and Watch a single attempt (see AttemptsOf).
	once bool
}

// list is a GET of the collection: the request of a List or a Watch.
func (c *client[T, L]) list(opts *metav1.ListOptions) *rest.Request {
	r := c.rest.Get().NamespaceIfScoped(c.namespace, c.namespace != "").Resource(c.resource).
		VersionedParams(opts, c.params).Timeout(ListTimeout(*opts))
	if c.once {
		r = r.MaxRetries(0)
	}
	return r
}

func (c *client[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := c.newT()
	err := c.rest.Get().NamespaceIfScoped(c.namespace, c.namespace != "").Resource(c.resource).Name(name).
		VersionedParams(&opts, c.params).Do(ctx).Into(out)
	return out, err
}

func (c *client[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := c.newL()
	err := c.list(&opts).Do(ctx).Into(out)
	return out, err
}

func (c *client[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.list(&opts).Watch(ctx)
}

func (c *client[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := c.newT()
	err := c.rest.Post().NamespaceIfScoped(c.namespace, c.namespace != "").Resource(c.resource).
		VersionedParams(&opts, c.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (c *client[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := c.newT()
	err := c.rest.Put().NamespaceIfScoped(c.namespace, c.namespace != "").Resource(c.resource).Name(obj.GetName()).
		VersionedParams(&opts, c.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (c *client[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.rest.Delete().NamespaceIfScoped(c.namespace, c.namespace != "").Resource(c.resource).Name(name).
		Body(&opts).Do(ctx).Error()
}

func (c *client[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte,
	opts metav1.PatchOptions, subresources ...string,
) (T, error) {
	out := c.newT()
	err := c.rest.Patch(pt).NamespaceIfScoped(c.namespace, c.namespace != "").Resource(c.resource).Name(name).
		SubResource(subresources...).VersionedParams(&opts, c.params).Body(data).Do(ctx).Into(out)
	return out, err
}

// ListTimeout is the request timeout a list or watch asks for (0: none).
func ListTimeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
