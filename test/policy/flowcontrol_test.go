package policy

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The daemons' evictions go to their own priority level (manifests/07-flowcontrol.yaml), so
// that the eviction policy's cost (one evaluation per Pod of the namespace) cannot take the
// API server's concurrency from other clients: the API server's answer to an eviction posted
// with a daemon's token names that level, and to another request of the same token (a Node
// read) another level.
func TestEvictionsHaveTheirOwnPriorityLevel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := start(ctx, t)
	level, err := b.admin.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, "nodeconfd-evictions", metav1.GetOptions{})
	check(t, err)
	hc, err := rest.HTTPClientFor(b.bound)
	check(t, err)
	send := func(method, path, body string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, method, b.bound.Host+path, stringsReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID"), nil
	}
	// Pod web-b is node B's: the policy refuses this eviction, after flow control classified it.
	eviction := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-b","namespace":"default"}}`
	got, err := send(http.MethodPost, "/api/v1/namespaces/default/pods/web-b/eviction", eviction)
	check(t, err)
	if got != string(level.UID) {
		t.Errorf("an eviction by a daemon went to priority level %q, want nodeconfd-evictions (%s)", got, level.UID)
	}
	// Its share of the API server's concurrency: the fewest seats a level can have.
	metrics, err := b.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	check(t, err)
	seats := ""
	for _, l := range strings.Split(string(metrics), "\n") {
		if rest, ok := strings.CutPrefix(l, `apiserver_flowcontrol_nominal_limit_seats{priority_level="nodeconfd-evictions"} `); ok {
			seats = rest
		}
	}
	if n, err := strconv.Atoi(seats); err != nil || n < 1 || n > 4 {
		t.Errorf("nodeconfd-evictions has %q seats, want 1 to 4", seats)
	} else {
		t.Logf("nodeconfd-evictions: %d seats", n)
	}
	got, err = send(http.MethodGet, "/api/v1/nodes/"+nodeA, "")
	check(t, err)
	if got == "" || got == string(level.UID) {
		t.Errorf("a daemon's Node read went to priority level %q, want another than nodeconfd-evictions", got)
	}
}

func stringsReader(s string) io.Reader {
	if s == "" {
		return http.NoBody
	}
	return strings.NewReader(s)
}
