package waits

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeconfd/nodeconfd/phases"
)

// Alert is one alert Prometheus has active, as the gate needs it.
type Alert struct {
	Name   string
	Labels map[string]string
	// Firing is false for an alert still pending (its `for` not yet
	// reached): only firing alerts hold, as kured's --alert-firing-only.
	Firing bool
}

// AlertSource lists the active alerts (Prometheus' /api/v1/alerts).
type AlertSource interface {
	Active(ctx context.Context) ([]Alert, error)
}

// AlertFilter picks the firing alerts that hold a disruption: a name that
// Names matches (nil: any), that Ignore does not (nil: none ignored;
// kured's --alert-filter-regexp), with labels Labels selects (nil or
// empty: any). The regexps match whole names (Anchored).
type AlertFilter struct {
	Names  *regexp.Regexp
	Ignore *regexp.Regexp
	Labels labels.Selector
}

// Holds reports whether a holds a disruption.
func (f AlertFilter) Holds(a Alert) bool {
	switch {
	case !a.Firing:
		return false
	case f.Names != nil && !f.Names.MatchString(a.Name):
		return false
	case f.Ignore != nil && f.Ignore.MatchString(a.Name):
		return false
	case f.Labels != nil && !f.Labels.Empty() && !f.Labels.Matches(labels.Set(a.Labels)):
		return false
	}
	return true
}

// Anchored compiles a regexp that must match a whole name, as Prometheus'
// own =~ matchers do.
func Anchored(expr string) (*regexp.Regexp, error) { return regexp.Compile(`^(?:` + expr + `)$`) }

// maxAlertsNamed bounds the alerts a message names.
const maxAlertsNamed = 10

// alertsHold is the hold of a disruption while alerts the filter picks
// fire: their names, sorted, once each.
func alertsHold(alerts []Alert, f AlertFilter, url string) (phases.Hold, bool) {
	var names []string
	for _, a := range alerts {
		if f.Holds(a) {
			names = append(names, clean(a.Name))
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		return phases.Hold{}, false
	}
	shown := names
	if len(shown) > maxAlertsNamed {
		shown = append(shown[:maxAlertsNamed:maxAlertsNamed], fmt.Sprintf("and %d more", len(names)-maxAlertsNamed))
	}
	return phases.Hold{Kind: phases.HoldAlerts, Message: fmt.Sprintf(
		"Alerts firing in Prometheus at %s: %s; the update starts once they stop", url, strings.Join(shown, ", "))}, true
}

// AlertGate holds a disruption while alerts fire (kured's alert gating).
type AlertGate struct {
	Source AlertSource
	// URL names the Prometheus in messages.
	URL    string
	Filter AlertFilter
	// Proceed lets an update go when Prometheus cannot be asked
	// (--alerts-unreachable=proceed); by default it holds.
	Proceed bool
	Log     *zap.Logger

	mu     sync.Mutex
	warned bool // Proceed: the failure is logged once until Prometheus answers again
}

// hold asks Prometheus and says whether alerts hold the update.
func (g *AlertGate) hold(ctx context.Context) (phases.Hold, bool) {
	alerts, err := g.Source.Active(ctx)
	if err != nil && ctx.Err() == nil {
		return g.unreachable(err)
	}
	g.mu.Lock()
	g.warned = false
	g.mu.Unlock()
	return alertsHold(alerts, g.Filter, g.URL)
}

func (g *AlertGate) unreachable(err error) (phases.Hold, bool) {
	if !g.Proceed {
		return phases.Hold{Kind: phases.HoldAlerts, Message: fmt.Sprintf(
			"Cannot ask Prometheus at %s for alerts (%v); holding, as --alerts-unreachable=hold says", g.URL, err)}, true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.warned && g.Log != nil {
		g.Log.Warn("Cannot ask Prometheus for alerts; the update goes on, as --alerts-unreachable=proceed says",
			zap.String("prometheus", g.URL), zap.Error(err))
	}
	g.warned = true
	return phases.Hold{}, false
}
