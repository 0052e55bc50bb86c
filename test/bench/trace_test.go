package bench

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io"
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
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// tracer records the API requests of one daemon, which reaches the API
// server through it. A nil tracer records nothing.
type tracer struct {
	mu    sync.Mutex
	start time.Time
	lines []string
}

// traceArgs, when NODECONFD_BENCH_TRACE is set, starts a logging proxy to
// the API server for node and returns the daemon flags that route the
// daemon through it (a later --kubeconfig wins over the bed's).
func traceArgs(b *testing.B, node string) ([]string, *tracer) {
	b.Helper()
	if os.Getenv("NODECONFD_BENCH_TRACE") == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The token bound to the daemon's pod on the node: the admission policy refuses others.
	path, err := bed.DaemonKubeconfig(ctx, node)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		b.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		b.Fatal(err)
	}
	// The daemon's own Authorization header passes through.
	transport, err := rest.TransportFor(&rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}})
	if err != nil {
		b.Fatal(err)
	}
	t := &tracer{start: time.Now()}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport, proxy.FlushInterval = transport, -1
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.add(r)
		proxy.ServeHTTP(w, r)
	}))
	srv.StartTLS()
	b.Cleanup(srv.Close)

	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	kc.AuthInfos["daemon"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "daemon"}
	kc.CurrentContext = "proxy"
	out := filepath.Join(b.TempDir(), node+"-trace.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, out); err != nil {
		b.Fatal(err)
	}
	return []string{"--kubeconfig", out}, t
}

func (t *tracer) add(r *http.Request) {
	line := fmt.Sprintf("%8.3fs %-6s %s", time.Since(t.start).Seconds(), r.Method, r.URL.Path)
	if q := r.URL.Query(); q.Has("watch") {
		line += " (watch)"
	} else if q.Has("fieldSelector") || q.Has("labelSelector") {
		line += " (list)"
	}
	if os.Getenv("NODECONFD_BENCH_TRACE") == "body" && r.Body != nil {
		// The write itself, cut: enough to tell which change each request carries.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		line += " " + string(body[:min(len(body), 2000)])
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
}

// mark returns the number of requests so far.
func (t *tracer) mark() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.lines)
}

// log prints the requests since mark to stderr (a benchmark's own log is
// cut to ten lines).
func (t *tracer) log(what string, mark int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	lines := append([]string(nil), t.lines[mark:]...)
	t.mu.Unlock()
	fmt.Fprintf(os.Stderr, "%s: %d requests through the proxy:\n  %s\n", what, len(lines), strings.Join(lines, "\n  "))
}
