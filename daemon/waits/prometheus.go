package waits

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/nodeconfd/nodeconfd/internal/httpcap"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// prometheusTimeout bounds one question to Prometheus: the gate asks
// again every few seconds, and a Prometheus that does not answer in this
// counts as unreachable.
const prometheusTimeout = 10 * time.Second

// maxAlertsBody caps the answer read from Prometheus: a few thousand
// alerts fit; a larger answer is refused (the gate then treats Prometheus
// as unreachable) rather than read into the daemon's memory.
const maxAlertsBody = 8 << 20

// Prometheus is the AlertSource of a Prometheus server, through its own
// client library.
type Prometheus struct{ api promv1.API }

// NewPrometheus returns the AlertSource of the Prometheus at url.
func NewPrometheus(url string) (*Prometheus, error) {
	c, err := api.NewClient(api.Config{Address: url, RoundTripper: httpcap.CapBody(http.DefaultTransport, maxAlertsBody)})
	if err != nil {
		return nil, fmt.Errorf("the Prometheus client for %s: %w", url, err)
	}
	return &Prometheus{api: promv1.NewAPI(c)}, nil
}

// Active lists the alerts Prometheus has active.
func (p *Prometheus) Active(ctx context.Context) ([]Alert, error) {
	ctx, cancel := context.WithTimeout(ctx, prometheusTimeout)
	defer cancel()
	res, err := p.api.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Alert, 0, len(res.Alerts))
	for _, a := range res.Alerts {
		l := make(map[string]string, len(a.Labels))
		for k, v := range a.Labels {
			l[string(k)] = string(v)
		}
		out = append(out, Alert{Name: l["alertname"], Labels: l, Firing: a.State == promv1.AlertStateFiring})
	}
	return out, nil
}
