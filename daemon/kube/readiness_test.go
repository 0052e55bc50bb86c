package kube

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// probeServer answers /readyz with code and an empty NodeList elsewhere,
// and records what it saw.
type probeServer struct {
	*httptest.Server
	code   atomic.Int32
	mu     sync.Mutex
	probes int
	auth   []string // the Authorization header of each probe
	conns  atomic.Int32
}

// seen is the probes so far and their Authorization headers.
func (s *probeServer) seen() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.probes, append([]string(nil), s.auth...)
}

func newProbeServer(t *testing.T) *probeServer {
	s := &probeServer{}
	s.code.Store(http.StatusOK)
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if r.URL.Path == "/readyz" {
			s.probes++
			s.auth = append(s.auth, r.Header.Get("Authorization"))
		}
		s.mu.Unlock()
		if r.URL.Path == "/readyz" {
			w.WriteHeader(int(s.code.Load()))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}`))
	}))
	s.EnableHTTP2 = true
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *probeServer) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return &rest.Config{Host: s.URL, BearerToken: "the-daemons-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

func TestReadinessAnswers(t *testing.T) {
	for _, tt := range []struct {
		code       int
		want       bool
		cannotTell bool
	}{
		{http.StatusOK, true, false},
		{http.StatusInternalServerError, false, false}, // a check failing while it starts
		{http.StatusServiceUnavailable, false, false},  // a proxy without a ready backend
		{http.StatusTooManyRequests, false, false},
		{http.StatusUnauthorized, true, true}, // anonymous authentication off
		{http.StatusForbidden, false, false},  // a server starting: its authorizers not up
		{http.StatusBadRequest, false, false},
		{http.StatusNotFound, true, true}, // a proxy that does not pass /readyz on
	} {
		s := newProbeServer(t)
		s.code.Store(int32(tt.code))
		r, err := NewReadiness(s.config())
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if got := r.Ready(context.Background()); got != tt.want {
				t.Errorf("%d: Ready = %v, want %v", tt.code, got, tt.want)
			}
		}
		wantProbes := 2
		if tt.cannotTell {
			wantProbes = 1 // not asked again
		}
		if n, _ := s.seen(); n != wantProbes {
			t.Errorf("%d: %d probes, want %d", tt.code, n, wantProbes)
		}
	}
}

// The probe carries none of the daemon's credentials, and goes over the
// API client's own connection (no second TLS handshake per daemon when the
// fleet reconnects).
func TestReadinessAnonymousOneConnection(t *testing.T) {
	s := newProbeServer(t)
	cfg := s.config()
	api, err := kubeapi.NewAPI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReadiness(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if !r.Ready(context.Background()) {
		t.Fatal("Ready = false against 200")
	}
	if _, auth := s.seen(); len(auth) != 1 || auth[0] != "" {
		t.Errorf("the probe's Authorization headers: %q, want one empty", auth)
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections, want the API client's one", n)
	}
}

// A server that does not answer is not ready; a nil Readiness always is.
func TestReadinessNoAnswer(t *testing.T) {
	s := newProbeServer(t)
	r, err := NewReadiness(s.config())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if r.Ready(context.Background()) {
		t.Error("Ready = true with the server gone")
	}
	var none *Readiness
	if !none.Ready(context.Background()) {
		t.Error("a nil Readiness is not ready")
	}
}

// A host behind a path prefix (a proxy) is probed under that prefix.
func TestReadinessURL(t *testing.T) {
	for host, want := range map[string]string{
		"https://10.0.0.1:6443":       "https://10.0.0.1:6443/readyz",
		"https://lb.example/k8s/":     "https://lb.example/k8s/readyz",
		"10.0.0.1:6443":               "https://10.0.0.1:6443/readyz",
		"https://api.example.com:443": "https://api.example.com:443/readyz",
	} {
		r, err := NewReadiness(&rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
		if err != nil {
			t.Fatal(err)
		}
		if r.url != want {
			t.Errorf("%s: probes %s, want %s", host, r.url, want)
		}
	}
}

// The watches of the node's objects make one attempt per call (kubeapi.AttemptsOf):
// client-go's own retries of a Retry-After answer, which the same client's
// Watch makes, would reach a restarting server out of the reconnect's
// pacing.
func TestAttemptsOfOneRequest(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	api, err := kubeapi.NewAPI(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
	if err != nil {
		t.Fatal(err)
	}
	_, watchOnce := kubeapi.AttemptsOf(api.Nodes())
	if _, err := watchOnce(context.Background(), metav1.ListOptions{}); err == nil {
		t.Fatal("a watch answered 429 succeeded")
	}
	if n := requests.Swap(0); n != 1 {
		t.Errorf("AttemptsOf's watch sent %d requests, want 1", n)
	}
	listOnce, _ := kubeapi.AttemptsOf(api.Nodes())
	if _, err := listOnce(context.Background(), metav1.ListOptions{}); err == nil {
		t.Fatal("a list answered 429 succeeded")
	}
	if n := requests.Swap(0); n != 1 {
		t.Errorf("AttemptsOf's list sent %d requests, want 1", n)
	}
	// The reason: the client's own Watch retries.
	if _, err := api.Nodes().Watch(context.Background(), metav1.ListOptions{}); err == nil {
		t.Fatal("a watch answered 429 succeeded")
	}
	if n := requests.Load(); n < 2 {
		t.Errorf("the client's Watch sent %d requests: client-go no longer retries, AttemptsOf may go", n)
	}
}
