package metrics

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Issue 27: a client that opens connections and keeps them silent is cut
// off at the header timeout, and connections past the cap wait until one
// closes: a scrape still gets through once the silent ones are gone.
func TestServerLimits(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim := serverLimits{conns: 2, header: 300 * time.Millisecond, read: time.Second, write: time.Second, idle: 300 * time.Millisecond}
	go func() { _ = serve(ctx, lis, handler(New().Registry, ServeOptions{}), lim) }()
	addr := lis.Addr().String()
	var silent []net.Conn
	for range lim.conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	// Past the cap: accepted by the kernel, not served while the silent
	// ones hold both places.
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if _, err := io.WriteString(extra, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = extra.SetReadDeadline(time.Now().Add(lim.header / 2))
	if n, err := extra.Read(make([]byte, 1)); n > 0 || err == nil {
		t.Error("a connection past the cap was served while the others were open")
	}
	// The silent connections are closed by the server (EOF), not held.
	for i, c := range silent {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("silent connection %d: read %v, want EOF from the server", i, err)
		}
	}
	// Now the extra one is served.
	_ = extra.SetDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
}

// The guard wraps /metrics only: the probes' paths answer without a token,
// and /readyz says what Ready says.
func TestHandlerGuardsMetricsOnly(t *testing.T) {
	notReady := errors.New("leading; the caches have not synced yet")
	ready := error(nil)
	guard := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	}
	h := handler(New().Registry, ServeOptions{Guard: guard, Ready: func() error { return ready }})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get("/metrics"); code != http.StatusUnauthorized {
		t.Errorf("/metrics: %d, want the guard's 401", code)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _ := get(p); code != http.StatusOK {
			t.Errorf("%s: %d, want 200 without a token", p, code)
		}
	}
	ready = notReady
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, notReady.Error()) {
		t.Errorf("/readyz while not ready: %d %q, want 503 saying why", code, body)
	}
}
