package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// hcProxy stands between one daemon and the API server and counts its
// requests (the API server's own metrics count every client of the shared
// bed): the daemon is given a kubeconfig to the proxy, plain HTTP on
// loopback, and the proxy forwards with the daemon's own credentials (its
// pod's token), so the admission policies judge the daemon as ever.
type hcProxy struct {
	srv        *httptest.Server
	Kubeconfig string

	name   string
	mu     sync.Mutex
	up     *httputil.ReverseProxy
	counts map[string]int
}

func newHCProxy(t *testing.T, name string) *hcProxy {
	t.Helper()
	p := &hcProxy{name: name, counts: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	p.Kubeconfig = filepath.Join(t.TempDir(), name+"-proxy.kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: proxy\n  cluster:\n    server: %s\n"+
		"users:\n- name: daemon\n  user: {}\ncontexts:\n- name: proxy\n  context: {cluster: proxy, user: daemon}\n"+
		"current-context: proxy\n", p.srv.URL)
	if err := os.WriteFile(p.Kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// upstream is the proxy to the API server with a token bound to the
// daemon's pod (what its own kubeconfig carries), made at the daemon's
// first request: by then the stand-in kubelet has registered the Node,
// whose name the token's claim carries.
func (p *hcProxy) upstream(ctx context.Context) (*httputil.ReverseProxy, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.up != nil {
		return p.up, nil
	}
	pod, err := bed.DaemonPod(ctx, p.name)
	if err != nil {
		return nil, err
	}
	cfg, err := bed.CP.RestConfigForPod(ctx, pod)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	p.up = httputil.NewSingleHostReverseProxy(target)
	p.up.Transport, p.up.FlushInterval = rt, -1
	return p.up, nil
}

func (p *hcProxy) serve(w http.ResponseWriter, r *http.Request) {
	up, err := p.upstream(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	verb := r.Method
	if r.Method == http.MethodGet {
		switch {
		case r.URL.Query().Get("watch") == "true":
			verb = "WATCH"
		case strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 2: // /api/v1/nodes
			verb = "LIST"
		}
	}
	key := verb + " " + r.URL.Path
	if sel := r.URL.Query().Get("labelSelector"); sel != "" {
		key += "?labelSelector=" + sel
	}
	p.mu.Lock()
	p.counts[key]++
	p.mu.Unlock()
	up.ServeHTTP(w, r)
}

// count sums the requests whose key starts with prefix ("LIST /api/v1/nodes").
func (p *hcProxy) count(prefix string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, v := range p.counts {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// wantWaitWatches checks that the waiting nodes sent no LIST of the Nodes
// in a time longer than the 30 s the wait used to poll at, and wait on a
// WATCH of the Nodes labelled with the failed config's hash.
func wantWaitWatches(t *testing.T, proxies []*hcProxy, names []string, first int) {
	t.Helper()
	before := make([]int, len(proxies))
	for i, p := range proxies {
		before[i] = p.count("LIST /api/v1/nodes")
	}
	time.Sleep(40 * time.Second)
	for i, p := range proxies {
		if i == first {
			continue
		}
		if n := p.count("LIST /api/v1/nodes") - before[i]; n != 0 {
			t.Errorf("%s sent %d LISTs of the Nodes while it waited, want none", names[i], n)
		}
		if p.count("WATCH /api/v1/nodes?labelSelector=machineconfiguration.openshift.io/failedConfigHash=") == 0 {
			t.Errorf("%s does not watch the Nodes labelled with the failed config's hash", names[i])
		}
	}
}

// wantWakeOnRemoval removes the failedConfig annotation of the failed node
// as an administrator would: its daemon removes the label, and a waiting
// node goes on (it is cordoned).
func wantWakeOnRemoval(ctx context.Context, t *testing.T, names []string, first int, cordons *cordonLog) {
	t.Helper()
	if _, err := bed.Kubectl(ctx, "annotate", "node", names[first], annFailed+"-"); err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		if _, ok := getNode(t, names[first]).Labels[labelFailedHash]; !ok {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Errorf("the failedConfigHash label of %s was not removed with its annotation", names[first])
	}
	for ctx.Err() == nil {
		for i, name := range names {
			cordons.mu.Lock()
			n := len(cordons.first[name])
			cordons.mu.Unlock()
			if i != first && n > 0 {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Error("no waiting node went on once the failedConfig annotation was removed")
}
