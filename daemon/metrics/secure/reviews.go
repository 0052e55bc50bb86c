package secure

import (
	"context"
	"fmt"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// APIReviewer asks the API server with TokenReviews and
// SubjectAccessReviews, the rights of RBAC's system:auth-delegator.
type APIReviewer struct {
	authn, authz rest.Interface
}

// NewAPIReviewer builds the two REST clients from cfg.
func NewAPIReviewer(cfg *rest.Config) (*APIReviewer, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(authnv1.AddToScheme(scheme))
	utilruntime.Must(authzv1.AddToScheme(scheme))
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	client := func(gv schema.GroupVersion) (rest.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion, c.APIPath, c.NegotiatedSerializer = &gv, "/apis", codecs
		c.ContentType = runtime.ContentTypeJSON
		rc, err := rest.RESTClientFor(c)
		if err != nil {
			return nil, fmt.Errorf("building the %s client: %w", gv, err)
		}
		return rc, nil
	}
	r := &APIReviewer{}
	var err error
	if r.authn, err = client(authnv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if r.authz, err = client(authzv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	return r, nil
}

// Authenticate posts a TokenReview of token.
func (r *APIReviewer) Authenticate(ctx context.Context, token string) (User, bool, error) {
	in := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}
	out := &authnv1.TokenReview{}
	if err := r.authn.Post().Resource("tokenreviews").Body(in).Do(ctx).Into(out); err != nil {
		return User{}, false, fmt.Errorf("creating a TokenReview: %w", err)
	}
	if !out.Status.Authenticated {
		return User{}, false, nil
	}
	u := out.Status.User
	extra := make(map[string][]string, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = v
	}
	return User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}, true, nil
}

// Authorize posts a SubjectAccessReview of u doing verb on the
// non-resource path.
func (r *APIReviewer) Authorize(ctx context.Context, u User, path, verb string) (bool, string, error) {
	extra := make(map[string]authzv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = v
	}
	in := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	out := &authzv1.SubjectAccessReview{}
	if err := r.authz.Post().Resource("subjectaccessreviews").Body(in).Do(ctx).Into(out); err != nil {
		return false, "", fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	return out.Status.Allowed && !out.Status.Denied, out.Status.Reason, nil
}
