package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// warmWatchCaches waits until the API server serves each CRD's resource as
// the daemons' informers read it: a streaming list (a watch with
// sendInitialEvents). kube-apiserver builds a custom resource's storage at
// its first request and refuses such a watch ("storage is (re)initializing",
// 429) until its watch cache has read etcd. A real cluster's CRDs have long
// been served; on a bed made a moment ago, a daemon's first watch met the
// refusal and waited out its jittered retry, so the first update of a
// benchmark took up to 7 s where a warm one takes 0.15 s. Plain HTTP, not a
// client-go client: that one waits out each refusal's Retry-After (1 s)
// before it tries again.
func warmWatchCaches(ctx context.Context, cfg *rest.Config, crds []*unstructured.Unstructured) error {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	errs := make([]error, len(crds))
	var wg sync.WaitGroup
	for i, crd := range crds {
		u, err := streamingList(cfg.Host, crd)
		if err != nil {
			return err
		}
		wg.Go(func() {
			err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				return streams(ctx, client, u)
			})
			if err != nil {
				errs[i] = fmt.Errorf("waiting for the watch cache of CRD %s: %w", crd.GetName(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// streams opens and closes one streaming list at u: false while the
// server's watch cache is not ready.
func streams(ctx context.Context, client *http.Client, u string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close() // the watch: its events are not needed
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusTooManyRequests:
		return false, nil
	}
	return false, fmt.Errorf("streaming list: %s", resp.Status)
}

// streamingList is the URL of a streaming list of the CRD's resource, at
// its first served version.
func streamingList(host string, crd *unstructured.Unstructured) (string, error) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if name, _ := m["name"].(string); name != "" && m["served"] == true {
			u, err := url.Parse(host)
			if err != nil {
				return "", fmt.Errorf("parsing the API server's address: %w", err)
			}
			u.Path = path.Join("/", u.Path, "apis", group, name, plural)
			u.RawQuery = url.Values{"watch": {"1"}, "sendInitialEvents": {"true"}, "allowWatchBookmarks": {"true"},
				"resourceVersionMatch": {"NotOlderThan"}, "timeoutSeconds": {"5"}}.Encode()
			return u.String(), nil
		}
	}
	return "", fmt.Errorf("CRD %s serves no version", crd.GetName())
}
