package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// Readiness asks the API server whether it is ready (GET /readyz) without
// credentials. A daemon that reconnects to a server still starting sends it
// a token to check while its caches are cold: the server GETs the token's
// ServiceAccount and Pod from etcd, and a fleet of daemons doing so at once
// is what made a restarted server slow to start and slow to answer
// (docs/fleet.md). An anonymous /readyz costs it no such check (the
// default authorization lets anyone ask it, and the "probes" FlowSchema
// exempts it from priority and fairness), so the watches of the daemon's
// own objects ask it first, after a failure, and wait again while it is
// not ready.
//
// A server that does not take anonymous requests (anonymous authentication
// off: 401), or a proxy that does not pass /readyz on (404), cannot tell:
// the probe is then dropped for the client's life and every attempt goes as
// it would without it. A 403 is not ready: a starting server answers it
// until its authorizers are up (seen for 1 to 5 s of a start on the test
// bed); a cluster that forbids anonymous /readyz for good only makes
// each reconnect wait the window out (maxNotReady).
type Readiness struct {
	client *http.Client
	url    string
	// cannotTell is set once the server answered the probe with neither
	// ready nor not ready.
	cannotTell atomic.Bool
}

// probeTimeout bounds one probe: a server that takes longer to say it is
// ready is not, for a reconnect.
const probeTimeout = 5 * time.Second

// NewReadiness builds the probe of cfg's API server. It carries none of
// cfg's credentials; it goes through cfg's transport wrappers (the request
// metrics) and, with the same TLS settings, over the API client's own
// connection (client-go shares a transport between configs whose TLS
// settings are the same).
func NewReadiness(cfg *rest.Config) (*Readiness, error) {
	anon := rest.AnonymousClientConfig(cfg)
	anon.WrapTransport = cfg.WrapTransport
	client, err := rest.HTTPClientFor(anon)
	if err != nil {
		return nil, fmt.Errorf("building the readiness probe's HTTP client: %w", err)
	}
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the readiness probe's URL: %w", err)
	}
	u.Path = path.Join("/", u.Path, "readyz")
	return &Readiness{client: client, url: u.String()}, nil
}

// Ready reports whether an attempt should go now: the server answered
// /readyz with 200, or cannot tell (401, 404). A server that does not
// answer, or answers anything else (500 while it starts or shuts down, 403
// and 429 while it starts, 503 from a proxy without a ready backend), is
// not ready. A nil Readiness is always ready.
func (r *Readiness) Ready(ctx context.Context) bool {
	if r == nil || r.cannotTell.Load() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return true
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return false
	}
	// Drained (bounded) so that the connection is kept for the attempt.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true
	case http.StatusUnauthorized, http.StatusNotFound:
		r.cannotTell.Store(true)
		return true
	default:
		return false
	}
}
