package waits

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeconfd/nodeconfd/phases"
)

func mustAnchored(t *testing.T, expr string) *regexp.Regexp {
	t.Helper()
	re, err := Anchored(expr)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

func TestAlertFilter(t *testing.T) {
	critical := labels.SelectorFromSet(labels.Set{"severity": "critical"})
	firing := func(name string, l map[string]string) Alert { return Alert{Name: name, Labels: l, Firing: true} }
	for _, tc := range []struct {
		name   string
		filter AlertFilter
		alert  Alert
		want   bool
	}{
		{"any firing alert holds", AlertFilter{}, firing("NodeDown", nil), true},
		{"a pending one does not", AlertFilter{}, Alert{Name: "NodeDown"}, false},
		{"name matches", AlertFilter{Names: mustAnchored(t, "Node.*")}, firing("NodeDown", nil), true},
		{"names match whole names", AlertFilter{Names: mustAnchored(t, "Node")}, firing("NodeDown", nil), false},
		{"leftmost alternative is not enough", AlertFilter{Names: mustAnchored(t, "a|ab")}, firing("ab", nil), true},
		{"ignored", AlertFilter{Ignore: mustAnchored(t, "Watchdog|InfoInhibitor")}, firing("Watchdog", nil), false},
		{"ignore matches whole names", AlertFilter{Ignore: mustAnchored(t, "Watchdog")}, firing("WatchdogDown", nil), true},
		{"labels selected", AlertFilter{Labels: critical}, firing("X", map[string]string{"severity": "critical"}), true},
		{"labels not selected", AlertFilter{Labels: critical}, firing("X", map[string]string{"severity": "info"}), false},
		{"label missing", AlertFilter{Labels: critical}, firing("X", nil), false},
		{"empty selector selects all", AlertFilter{Labels: labels.Everything()}, firing("X", nil), true},
	} {
		if got := tc.filter.Holds(tc.alert); got != tc.want {
			t.Errorf("%s: Holds = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAlertsHold(t *testing.T) {
	var alerts []Alert
	for i := range 12 {
		alerts = append(alerts, Alert{Name: fmt.Sprintf("Alert%02d", 11-i), Firing: true})
	}
	alerts = append(alerts, Alert{Name: "Alert00", Firing: true}, Alert{Name: "Bad\nName\u202e", Firing: true},
		Alert{Name: "Pending"})
	h, ok := alertsHold(alerts, AlertFilter{}, "http://prom:9090")
	if !ok || h.Kind != phases.HoldAlerts {
		t.Fatalf("hold %v %+v", ok, h)
	}
	want := "Alerts firing in Prometheus at http://prom:9090: Alert00, Alert01, Alert02, Alert03, Alert04, Alert05, " +
		"Alert06, Alert07, Alert08, Alert09, and 3 more; the update starts once they stop"
	if h.Message != want {
		t.Errorf("message\n %q\nwant\n %q", h.Message, want)
	}
	if strings.ContainsAny(h.Message, "\n\u202e") || strings.Contains(h.Message, "Pending") {
		t.Errorf("message %q", h.Message)
	}
	if _, ok := alertsHold([]Alert{{Name: "Pending"}}, AlertFilter{}, "u"); ok {
		t.Error("a pending alert holds")
	}
}

type alertsFunc func(context.Context) ([]Alert, error)

func (f alertsFunc) Active(ctx context.Context) ([]Alert, error) { return f(ctx) }

// An unreachable Prometheus holds by default; with Proceed it lets the
// update go and warns once until Prometheus answers again.
func TestAlertGateUnreachable(t *testing.T) {
	down := true
	src := alertsFunc(func(context.Context) ([]Alert, error) {
		if down {
			return nil, errors.New("connection refused")
		}
		return nil, nil
	})
	g := &AlertGate{Source: src, URL: "http://prom:9090"}
	h, ok := g.hold(context.Background())
	if !ok || h.Kind != phases.HoldAlerts || !strings.Contains(h.Message, "Cannot ask Prometheus at http://prom:9090") ||
		!strings.Contains(h.Message, "connection refused") {
		t.Errorf("hold %v %+v", ok, h)
	}
	core, logs := observer.New(zap.WarnLevel)
	g = &AlertGate{Source: src, URL: "u", Proceed: true, Log: zap.New(core)}
	for range 3 {
		if h, ok := g.hold(context.Background()); ok {
			t.Errorf("proceed: held %+v", h)
		}
	}
	down = false
	g.hold(context.Background())
	down = true
	g.hold(context.Background())
	if n := logs.Len(); n != 2 {
		t.Errorf("%d warnings, want one per failure streak (2)", n)
	}
}

// The adapter reads Prometheus' answer through its client library, and
// refuses an answer too large to read.
func TestPrometheusActive(t *testing.T) {
	big := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/alerts" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if big {
			fmt.Fprint(w, `{"status":"success","data":{"alerts":[`)
			for i := range maxAlertsBody / 64 {
				fmt.Fprintf(w, `{"labels":{"alertname":"A%d"},"state":"firing","activeAt":"2026-12-04T10:00:00Z"},`, i)
			}
			fmt.Fprint(w, `{"labels":{"alertname":"Last"},"state":"firing"}]}}`)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"alerts":[`+
			`{"labels":{"alertname":"NodeDown","severity":"critical"},"state":"firing","activeAt":"2026-12-04T10:00:00Z","value":"1e+00"},`+
			`{"labels":{"alertname":"DiskFilling"},"state":"pending","activeAt":"2026-12-04T10:00:00Z","value":"1e+00"}]}}`)
	}))
	defer srv.Close()
	p, err := NewPrometheus(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Active(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "NodeDown" || !got[0].Firing || got[0].Labels["severity"] != "critical" ||
		got[1].Name != "DiskFilling" || got[1].Firing {
		t.Errorf("alerts %+v", got)
	}
	big = true
	if got, err := p.Active(context.Background()); err == nil {
		t.Errorf("an answer over %d bytes was read: %d alerts", maxAlertsBody, len(got))
	}
}
