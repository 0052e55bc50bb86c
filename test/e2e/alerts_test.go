package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// alertRules fire E2EDiskFilling (critical) while the test's target says
// so, and Watchdog always, as kube-prometheus does.
const alertRules = `groups:
- name: e2e
  rules:
  - alert: E2EDiskFilling
    expr: e2e_alert_firing > 0
    labels: {severity: critical}
  - alert: Watchdog
    expr: vector(1)
    labels: {severity: none}
`

// A real Prometheus scrapes a target the test controls: while its alert
// fires, an update that reboots waits before the cordon, the status naming
// the alert (not the ignored Watchdog); once it stops, the update goes.
// A node whose Prometheus cannot be asked holds, saying why.
func TestAlertsHoldDisruption(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var firing atomic.Bool
	firing.Store(true)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		v := 0
		if firing.Load() {
			v = 1
		}
		fmt.Fprintf(w, "# TYPE e2e_alert_firing gauge\ne2e_alert_firing %d\n", v)
	}))
	defer target.Close()
	cfg := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [rules.yml]\n"+
		"scrape_configs:\n- job_name: e2e\n  static_configs: [{targets: [%q]}]\n", strings.TrimPrefix(target.URL, "http://"))
	prom, err := bed.StartPrometheus(ctx, t.TempDir(), cfg, map[string]string{"rules.yml": alertRules})
	if err != nil {
		t.Fatal(err)
	}
	defer prom.Stop()
	if err := waitAlert(ctx, prom.URL, "E2EDiskFilling", true); err != nil {
		t.Fatal(err)
	}

	config(t, "rendered-alert-a", ign(nil))
	config(t, "rendered-alert-b", ign(map[string]string{"/etc/motd.d/alert": "b\n"}))
	n, log := nodeOpts(t, "alert-1", "rendered-alert-a", testbed.NodeOptions{ExtraArgs: []string{
		"--prometheus-url", prom.URL, "--alert-ignore-regexp", "Watchdog", "--alert-label-selector", "severity=critical"}})
	closed := closedPort(t)
	down, downLog := nodeOpts(t, "alert-2", "rendered-alert-a", testbed.NodeOptions{ExtraArgs: []string{
		"--prometheus-url", "http://" + closed, "--alert-name-regexp", ".+"}})
	for _, node := range []*testbed.Node{n, down} {
		if err := node.SetDesired(ctx, "rendered-alert-b"); err != nil {
			t.Fatal(err)
		}
	}
	want := "Alerts firing in Prometheus at " + prom.URL + ": E2EDiskFilling; the update starts once they stop"
	if err := waitMessage(ctx, log, "Cordoned", "Waiting", want); err != nil {
		t.Fatal(err)
	}
	if err := waitMessage(ctx, downLog, "Cordoned", "Waiting", "Cannot ask Prometheus at http://"+closed+" for alerts"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // a few of the gate's checks
	if getNode(t, "alert-1").Spec.Unschedulable || log.Latest().ConfigVersion.Current != "rendered-alert-a" {
		t.Error("node cordoned or updated while an alert fired")
	}
	if getNode(t, "alert-2").Spec.Unschedulable {
		t.Error("node cordoned while Prometheus could not be asked")
	}

	stopped := time.Now()
	firing.Store(false)
	if err := waitCurrent(ctx, log, "rendered-alert-b"); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s after the alert's metric went to 0", time.Since(stopped).Round(time.Second))
	if got := readNodeFile(t, n, "/etc/motd.d/alert"); got != "b\n" {
		t.Errorf("file = %q", got)
	}
	wantEvents(t, "alert-1", "Node", "AlertsFiring", "WaitEnded")
	if c := downLog.Latest().ConfigVersion.Current; c != "rendered-alert-a" {
		t.Errorf("node without Prometheus runs %s", c)
	}
}

// waitAlert waits until Prometheus reports alert name firing (or not).
func waitAlert(ctx context.Context, url, name string, want bool) error {
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return err
	}
	p := promv1.NewAPI(c)
	for {
		res, err := p.Alerts(ctx)
		got := false
		for _, a := range res.Alerts {
			got = got || string(a.Labels["alertname"]) == name && a.State == promv1.AlertStateFiring
		}
		if err == nil && got == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for alert %s firing=%v: %w (last error: %v)", name, want, ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
