package fleet

import (
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
)

// counter counts the requests the daemons send, on their side of the wire,
// by verb and resource: the API server's own counts include the
// benchmark's requests (annotating nodes, watching the MachineConfigNodes).
type counter struct {
	mu     sync.Mutex
	counts map[reqKey]int64
	// open counts the daemons' watches open now: answered 200 OK, and
	// their response body not closed yet.
	open int64
}

// reqKey is a request's kind as apiserver_request_total labels it.
type reqKey struct{ Verb, Resource string }

func newCounter() *counter { return &counter{counts: map[reqKey]int64{}} }

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return countingRT{rt: rt, c: c}
}

// snapshot copies the counts.
func (c *counter) snapshot() map[reqKey]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// watchesOpen is how many of the daemons' watches are open now.
func (c *counter) watchesOpen() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

func (c *counter) watchOpened(delta int64) {
	c.mu.Lock()
	c.open += delta
	c.mu.Unlock()
}

// watchBody is an open watch's response body: closing it (the watch ends)
// counts the watch closed, once.
type watchBody struct {
	io.ReadCloser
	c      *counter
	closed sync.Once
}

func (b *watchBody) Close() error {
	b.closed.Do(func() { b.c.watchOpened(-1) })
	return b.ReadCloser.Close()
}

type countingRT struct {
	rt http.RoundTripper
	c  *counter
}

func (r countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	k := classify(req)
	r.c.mu.Lock()
	r.c.counts[k]++
	r.c.mu.Unlock()
	resp, err := r.rt.RoundTrip(req)
	if k.Verb == "WATCH" && err == nil && resp.StatusCode == http.StatusOK {
		r.c.watchOpened(1)
		resp.Body = &watchBody{ReadCloser: resp.Body, c: r.c}
	}
	return resp, err
}

// classify names a request as the API server's metrics do: verb GET, LIST,
// WATCH, POST, PUT, PATCH, DELETE; resource with its subresource
// ("machineconfignodes/status"); a path outside the API (the readiness
// probe's /readyz) is its own resource, verb GET.
func classify(req *http.Request) reqKey {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if parts[0] != "api" && parts[0] != "apis" {
		return reqKey{Verb: req.Method, Resource: req.URL.Path}
	}
	// /api/v1/... or /apis/group/version/...
	if parts[0] == "apis" && len(parts) > 2 {
		parts = parts[3:]
	} else if len(parts) > 1 {
		parts = parts[2:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	resource, named := "", false
	if len(parts) > 0 {
		resource = parts[0]
	}
	if len(parts) > 1 {
		named = true
	}
	if len(parts) > 2 {
		resource += "/" + parts[2]
	}
	verb := req.Method
	switch {
	case req.Method == http.MethodGet && req.URL.Query().Get("watch") == "true":
		verb = "WATCH"
	case req.Method == http.MethodGet && !named:
		verb = "LIST"
	case req.Method == http.MethodPost:
		verb = "CREATE"
	case req.Method == http.MethodPut:
		verb = "UPDATE"
	}
	return reqKey{Verb: verb, Resource: resource}
}

// diffCounts is after minus before.
func diffCounts(before, after map[reqKey]int64) map[reqKey]int64 {
	d := map[reqKey]int64{}
	for k, v := range after {
		if n := v - before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// total sums the counts, without watches when !watches.
func total(counts map[reqKey]int64, watches bool) int64 {
	var n int64
	for k, v := range counts {
		if k.Verb == "WATCH" && !watches {
			continue
		}
		n += v
	}
	return n
}
