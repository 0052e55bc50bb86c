// Package secure guards the metrics endpoints of the daemon and the
// controller, which listen on the node's network (the daemon on the host's):
// a request to a guarded path must carry a bearer token that the API server
// authenticates (a TokenReview) and authorizes for the path (a
// SubjectAccessReview of the non-resource URL, verb get), as kube-rbac-proxy
// and controller-runtime's metrics filters do; and the page is served over
// TLS, so that the token does not cross the network in the clear.
//
// It does not use k8s.io/apiserver's delegating authenticator and authorizer
// (what those two use): they import client-go's clientset and every API
// group's types, which the binary is kept free of (cmd/nodeconfd's
// TestNoClientsetInBinary). The two reviews are two POSTs (reviews.go); the
// caches and their lifetimes are controller-runtime's.
package secure

import (
	"context"
	"crypto/sha256"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/cache"
)

// User is who a token belongs to, as the TokenReview says.
type User struct {
	Name, UID string
	Groups    []string
	Extra     map[string][]string
}

// Reviewer asks the API server who a token is and what they may do.
type Reviewer interface {
	// Authenticate returns the token's user; ok is false when the API
	// server does not accept the token.
	Authenticate(ctx context.Context, token string) (u User, ok bool, err error)
	// Authorize tells whether u may do verb on the non-resource path, and
	// why not.
	Authorize(ctx context.Context, u User, path, verb string) (allowed bool, reason string, err error)
}

// The caches' lifetimes, controller-runtime's (filters.
// WithAuthenticationAndAuthorization): Prometheus scrapes every 15 to 60
// s with the same token, so each target asks the API server about once a
// minute, and a revoked right lasts at most 5 minutes.
const (
	authnTTL     = time.Minute
	allowTTL     = 5 * time.Minute
	denyTTL      = 30 * time.Second
	cacheEntries = 256 // bounds the memory a flood of made-up tokens can take
	reviewTime   = 10 * time.Second
)

// Guard wraps handlers: requests to the paths it guards need a token the
// reviewer accepts; others pass.
type Guard struct {
	reviewer Reviewer
	log      *zap.Logger
	authn    *cache.LRUExpireCache // token hash -> authnResult
	authz    *cache.LRUExpireCache // user, path, verb -> authzResult
}

type authnResult struct {
	user User
	ok   bool
}

type authzResult struct {
	allowed bool
	reason  string
}

// NewGuard returns a Guard asking r.
func NewGuard(r Reviewer, log *zap.Logger) *Guard {
	return &Guard{reviewer: r, log: log, authn: cache.NewLRUExpireCache(cacheEntries),
		authz: cache.NewLRUExpireCache(cacheEntries)}
}

// Wrap guards next: 401 without a token the API server accepts, 403 when
// its user may not get the path, 500 when the API server cannot be asked
// whether it may.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, found := bearer(r)
		if !found {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), reviewTime)
		defer cancel()
		u, ok, err := g.authenticate(ctx, token)
		if err != nil || !ok {
			// The token's owner is unknown: at debug level only, so that a
			// flood of made-up tokens does not flood the log.
			g.log.Debug("Refused a metrics request: token not accepted", zap.String("path", r.URL.Path), zap.Error(err))
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(r.Method)
		allowed, reason, fresh, err := g.authorize(ctx, u, r.URL.Path, verb)
		if err != nil {
			g.log.Warn("Cannot ask the API server whether a metrics request is allowed", zap.String("user", u.Name),
				zap.String("path", r.URL.Path), zap.Error(err))
			http.Error(w, "Authorization error", http.StatusInternalServerError)
			return
		}
		if !allowed {
			if !fresh { // logged when the API server said so: once per denyTTL per user, however often it asks
				http.Error(w, "Forbidden: "+u.Name+" may not "+verb+" "+r.URL.Path, http.StatusForbidden)
				return
			}
			g.log.Info("Refused a metrics request: not allowed", zap.String("user", u.Name), zap.String("path", r.URL.Path),
				zap.String("verb", verb), zap.String("reason", reason))
			http.Error(w, "Forbidden: "+u.Name+" may not "+verb+" "+r.URL.Path, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	return token, found && strings.EqualFold(scheme, "bearer") && token != ""
}

func (g *Guard) authenticate(ctx context.Context, token string) (User, bool, error) {
	key := sha256.Sum256([]byte(token)) // the cache never holds the token itself
	if v, ok := g.authn.Get(key); ok {
		res := v.(authnResult)
		return res.user, res.ok, nil
	}
	u, ok, err := g.reviewer.Authenticate(ctx, token)
	if err != nil {
		return User{}, false, err
	}
	g.authn.Add(key, authnResult{user: u, ok: ok}, authnTTL)
	return u, ok, nil
}

// authorize answers from the cache, or asks the API server (fresh).
func (g *Guard) authorize(ctx context.Context, u User, path, verb string) (allowed bool, reason string, fresh bool, err error) {
	key := authzKey(u, path, verb)
	if v, ok := g.authz.Get(key); ok {
		res := v.(authzResult)
		return res.allowed, res.reason, false, nil
	}
	allowed, reason, err = g.reviewer.Authorize(ctx, u, path, verb)
	if err != nil {
		return false, "", false, err
	}
	ttl := denyTTL
	if allowed {
		ttl = allowTTL
	}
	g.authz.Add(key, authzResult{allowed: allowed, reason: reason}, ttl)
	return allowed, reason, true, nil
}

// authzKey is what the authorization depends on, unambiguously (each part
// length-prefixed, each list counted).
func authzKey(u User, path, verb string) [sha256.Size]byte {
	h := sha256.New()
	write := func(s string) {
		var n [8]byte
		for i := range n {
			n[i] = byte(len(s) >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write(u.Name)
	write(u.UID)
	write(strconv.Itoa(len(u.Groups)))
	for _, g := range u.Groups {
		write(g)
	}
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		write(k)
		write(strconv.Itoa(len(u.Extra[k])))
		for _, v := range u.Extra[k] {
			write(v)
		}
	}
	write(path)
	write(verb)
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out
}
