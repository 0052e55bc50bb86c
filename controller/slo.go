package controller

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/controller/rollout"
	"github.com/nodeconfd/nodeconfd/internal/httpcap"
)

// SLOSource asks Prometheus a pool's service-level queries.
type SLOSource interface {
	// Values returns the values of expr's samples now; none when the
	// query has no data.
	Values(ctx context.Context, expr string) ([]float64, error)
}

// sloTimeout bounds one query.
const sloTimeout = 10 * time.Second

// An SLO query's answer is read up to maxSLOBody bytes and maxSLOSeries
// samples: a query that names a million series (or a Prometheus that
// streams without end) is refused, and the rollout waits saying why,
// rather than the controller reading it into memory.
const (
	maxSLOBody   = 4 << 20
	maxSLOSeries = 10000
)

// Prometheus is the SLOSource of a Prometheus server, through its own
// client library.
type Prometheus struct{ api promv1.API }

// NewPrometheus returns the SLOSource of the Prometheus at url.
func NewPrometheus(url string) (*Prometheus, error) {
	c, err := api.NewClient(api.Config{Address: url, RoundTripper: httpcap.CapBody(http.DefaultTransport, maxSLOBody)})
	if err != nil {
		return nil, fmt.Errorf("the Prometheus client for %s: %w", url, err)
	}
	return &Prometheus{api: promv1.NewAPI(c)}, nil
}

// Values runs expr as an instant query: a vector's samples or a scalar.
func (p *Prometheus) Values(ctx context.Context, expr string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, sloTimeout)
	defer cancel()
	v, _, _, err := p.api.Query(ctx, expr, time.Now())
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case model.Vector:
		if len(v) > maxSLOSeries {
			return nil, fmt.Errorf("the query gives %d series, over the %d read: narrow it (by sum, max or a label)",
				len(v), maxSLOSeries)
		}
		out := make([]float64, 0, len(v))
		for _, s := range v {
			out = append(out, float64(s.Value))
		}
		return out, nil
	case *model.Scalar:
		return []float64{float64(v.Value)}, nil
	}
	return nil, fmt.Errorf("the query gives a %s, want an instant vector or a scalar", v.Type())
}

// checkSLOs asks the pool's queries while a node soaks on its config. It
// returns the first breach (every sample must keep its query; a query
// with no data keeps it; NaN breaks it), or why the queries could not be
// asked (the rollout then waits), and whether a node soaks.
func (c *Controller) checkSLOs(ctx context.Context, in rollout.Input, slos []rollout.SLO, log *zap.Logger) (
	*rollout.Breach, string, bool) {
	node, _ := rollout.Soaking(in)
	if node == "" || len(slos) == 0 || rollout.BreachOf(in.Pool, in.Target) != "" {
		return nil, "", node != "" && len(slos) > 0
	}
	if c.SLOs == nil {
		return nil, "the pool has SLO queries (" + SLOAnnotation + ") but the controller has no --prometheus-url", true
	}
	for _, s := range slos {
		vals, err := c.SLOs.Values(ctx, s.Expr)
		if err != nil {
			return nil, fmt.Sprintf("cannot ask Prometheus the SLO %q during node %s's soak: %v", s.Text, node, err), true
		}
		for _, v := range vals {
			if math.IsNaN(v) || !s.Holds(v) {
				b := &rollout.Breach{Config: in.Target, Node: node, SLO: s.Text, Value: v}
				log.Info("SLO broken during a node's soak; the rollout stops", zap.String("config", in.Target),
					zap.String("node", node), zap.String("slo", s.Text), zap.Float64("value", v))
				return b, "", true
			}
		}
	}
	return nil, "", true
}

// rollBack hands the nodes that broke an SLO the pool's previous config.
func (c *Controller) rollBack(ctx context.Context, pool *mcfgv1.MachineConfigPool, nodes []string, in rollout.Input,
	log *zap.Logger) error {
	for _, node := range nodes {
		if err := c.hand(ctx, pool, node, in.Previous, log); err != nil {
			return err
		}
		c.event(pool, true, "SLOBreached", fmt.Sprintf("%s; node %s rolled back to %s", in.Breach, node, in.Previous))
	}
	return nil
}
