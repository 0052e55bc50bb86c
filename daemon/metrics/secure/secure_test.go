package secure

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/client-go/util/cert"
)

// fakeReviewer knows one token and one allowed user, and counts its
// reviews.
type fakeReviewer struct {
	mu           sync.Mutex
	authn, authz int
	authzErr     error
}

func (f *fakeReviewer) Authenticate(_ context.Context, token string) (User, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authn++
	switch token {
	case "prom":
		return User{Name: "system:serviceaccount:monitoring:prometheus", Groups: []string{"system:serviceaccounts"}}, true, nil
	case "other":
		return User{Name: "system:serviceaccount:default:other"}, true, nil
	case "broken":
		return User{}, false, errors.New("API server away")
	}
	return User{}, false, nil
}

func (f *fakeReviewer) Authorize(_ context.Context, u User, path, verb string) (bool, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authz++
	if f.authzErr != nil {
		return false, "", f.authzErr
	}
	ok := u.Name == "system:serviceaccount:monitoring:prometheus" && path == "/metrics" && verb == "get"
	return ok, "no RBAC rule", nil
}

func get(t *testing.T, h http.Handler, header string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if header != "" {
		req.Header.Set("Authorization", header)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// Each refusal has its status, a request passes only with a token the API
// server accepts and a user it authorizes, and the reviews are cached.
func TestGuard(t *testing.T) {
	f := &fakeReviewer{}
	page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("page")) })
	h := NewGuard(f, zap.NewNop()).Wrap(page)
	for _, c := range []struct {
		header string
		want   int
	}{
		{"", http.StatusUnauthorized},
		{"Basic cHJvbTpwcm9t", http.StatusUnauthorized},
		{"Bearer ", http.StatusUnauthorized},
		{"Bearer made-up", http.StatusUnauthorized},
		{"Bearer broken", http.StatusUnauthorized},
		{"Bearer other", http.StatusForbidden},
		{"Bearer prom", http.StatusOK},
		{"bearer  prom ", http.StatusOK},
	} {
		if got := get(t, h, c.header); got != c.want {
			t.Errorf("Authorization %q: status %d, want %d", c.header, got, c.want)
		}
	}
	// made-up, broken, other, prom: four reviews of tokens (the failed
	// one is asked again, not cached); other and prom: two authorizations.
	if f.authn != 4 || f.authz != 2 {
		t.Errorf("reviews: %d TokenReviews, %d SubjectAccessReviews; want 4 and 2 (the rest cached)", f.authn, f.authz)
	}
	for range 3 {
		get(t, h, "Bearer prom")
		get(t, h, "Bearer other")
		get(t, h, "Bearer made-up")
	}
	if f.authn != 4 || f.authz != 2 {
		t.Errorf("after repeats: %d TokenReviews, %d SubjectAccessReviews; want still 4 and 2", f.authn, f.authz)
	}
}

// An API server that cannot say whether a user may is a 500, not a pass.
func TestGuardAuthorizationError(t *testing.T) {
	f := &fakeReviewer{authzErr: errors.New("timeout")}
	h := NewGuard(f, zap.NewNop()).Wrap(http.NotFoundHandler())
	if got := get(t, h, "Bearer prom"); got != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", got)
	}
}

// Two users with the same name but other groups are authorized apart.
func TestAuthzKey(t *testing.T) {
	a := authzKey(User{Name: "u", Groups: []string{"a", "b"}}, "/metrics", "get")
	b := authzKey(User{Name: "u", Groups: []string{"ab"}}, "/metrics", "get")
	c := authzKey(User{Name: "u", Groups: []string{"a"}, Extra: map[string][]string{"b": nil}}, "/metrics", "get")
	if a == b || a == c || b == c {
		t.Error("different users share an authorization cache key")
	}
}

// The self-signed certificate serves; a provided pair is read again when
// its files change.
func TestTLSConfig(t *testing.T) {
	if _, err := TLSConfig("a.crt", "", "h"); err == nil {
		t.Error("a certificate without a key: no error")
	}
	cfg, err := TLSConfig("", "", "node-1")
	if err != nil || len(cfg.Certificates) != 1 {
		t.Fatalf("self-signed: %v", err)
	}
	dir := t.TempDir()
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(host string) {
		c, k, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(crt, c, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(key, k, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	cfg, err = TLSConfig(crt, key, "")
	if err != nil {
		t.Fatal(err)
	}
	first := leafName(t, cfg)
	write("second-name") // another size: seen as changed even within the file time's resolution
	if second := leafName(t, cfg); first != "first" || second != "second-name" {
		t.Errorf("served %q then %q, want first then second-name", first, second)
	}
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	if got := leafName(t, cfg); got != "second-name" {
		t.Errorf("with the key gone: %q, want the last good pair", got)
	}
}

func leafName(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	pair, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		t.Fatal("no parsed leaf")
	}
	name, _, _ := strings.Cut(leaf.Subject.CommonName, "@") // host@<time>
	return name
}

// A user refused again and again is logged once per answer of the API
// server, not once per request.
func TestGuardLogsRefusalOnce(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	h := NewGuard(&fakeReviewer{}, zap.New(core)).Wrap(http.NotFoundHandler())
	for range 5 {
		if got := get(t, h, "Bearer other"); got != http.StatusForbidden {
			t.Fatalf("status %d, want 403", got)
		}
	}
	if n := logs.FilterMessage("Refused a metrics request: not allowed").Len(); n != 1 {
		t.Errorf("%d refusal lines for 5 requests, want 1", n)
	}
}
