// Package httpcap bounds what an HTTP client reads: a transport whose
// answers are read up to a cap and no further. Both processes ask
// Prometheus through it (the daemon's alert gate, the controller's SLO
// gate), so that an answer too large is refused, not read into memory.
package httpcap

import (
	"fmt"
	"io"
	"net/http"
)

// CapBody is a transport whose answers are read at most max bytes: past
// them a read fails, naming the cap, so that an answer too large (a
// Prometheus asked a query of a million series, or one that streams
// without end) is refused rather than read into memory.
func CapBody(next http.RoundTripper, max int64) http.RoundTripper { return capBody{next, max} }

type capBody struct {
	next http.RoundTripper
	max  int64
}

func (c capBody) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &capped{r: io.LimitReader(resp.Body, c.max+1), left: c.max + 1, max: c.max, Closer: resp.Body}
	return resp, nil
}

// capped reads up to max bytes and fails on the byte after.
type capped struct {
	r         io.Reader
	left, max int64
	io.Closer
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left <= 0 {
		return max(n-1, 0), fmt.Errorf("the answer is over %d bytes", c.max)
	}
	return n, err
}
