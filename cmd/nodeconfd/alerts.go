package main

import (
	"flag"
	"fmt"
	"net/url"
	"regexp"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeconfd/nodeconfd/daemon/waits"
)

// alertOptions are the flags of the alert gate (kured's alert gating):
// while an alert they pick fires in Prometheus, no disruption starts.
type alertOptions struct {
	url, names, ignore, labels, unreachable string
	filter                                  waits.AlertFilter
}

func addAlertFlags(fs *flag.FlagSet) *alertOptions {
	a := &alertOptions{}
	fs.StringVar(&a.url, "prometheus-url", "", "Prometheus to ask for alerts (e.g. http://prometheus.monitoring:9090): "+
		"while an alert the --alert-* flags pick fires, updates that drain or reboot wait (none: no alert gating)")
	fs.StringVar(&a.names, "alert-name-regexp", "", "only alerts whose whole name matches this regexp hold updates "+
		"(with --prometheus-url, this or --alert-label-selector is needed; '.+' for every alert)")
	fs.StringVar(&a.ignore, "alert-ignore-regexp", "", "alerts whose whole name matches this regexp never hold "+
		"updates, as kured's --alert-filter-regexp (e.g. Watchdog|InfoInhibitor, which kube-prometheus fires always)")
	fs.StringVar(&a.labels, "alert-label-selector", "", "only alerts whose labels this Kubernetes label selector "+
		"selects hold updates (e.g. \"severity in (critical,warning)\"; none: any labels, when --alert-name-regexp is set)")
	fs.StringVar(&a.unreachable, "alerts-unreachable", "hold", "when Prometheus cannot be asked: hold (wait, the "+
		"default) or proceed (update as if no alert fired)")
	return a
}

// check validates the flags once parsed, naming the flag at fault.
func (a *alertOptions) check() error {
	if a.unreachable != "hold" && a.unreachable != "proceed" {
		return fmt.Errorf("--alerts-unreachable %q: want hold or proceed", a.unreachable)
	}
	if a.url == "" {
		if a.names != "" || a.ignore != "" || a.labels != "" {
			return fmt.Errorf("--alert-name-regexp, --alert-ignore-regexp and --alert-label-selector need --prometheus-url")
		}
		return nil
	}
	// No default selection: every alert would let anyone who can make
	// one fire (a tenant's PrometheusRule) hold every node's updates.
	if a.names == "" && a.labels == "" {
		return fmt.Errorf("--prometheus-url: say which alerts hold updates with --alert-label-selector " +
			"(e.g. 'severity=critical') or --alert-name-regexp ('.+' for every alert)")
	}
	u, err := url.Parse(a.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--prometheus-url %q: want an http or https URL with a host, and no user info or query (they would show in the status)", a.url)
	}
	for _, re := range []struct {
		flag, expr string
		into       **regexp.Regexp
	}{{"--alert-name-regexp", a.names, &a.filter.Names}, {"--alert-ignore-regexp", a.ignore, &a.filter.Ignore}} {
		if re.expr == "" {
			continue
		}
		if *re.into, err = waits.Anchored(re.expr); err != nil {
			return fmt.Errorf("%s %q: %w", re.flag, re.expr, err)
		}
	}
	if a.labels != "" {
		if a.filter.Labels, err = labels.Parse(a.labels); err != nil {
			return fmt.Errorf("--alert-label-selector %q: %w", a.labels, err)
		}
	}
	return nil
}

// gate is the alert gate the flags describe, nil without --prometheus-url.
func (a *alertOptions) gate(log *zap.Logger) (*waits.AlertGate, error) {
	if a.url == "" {
		return nil, nil
	}
	p, err := waits.NewPrometheus(a.url)
	if err != nil {
		return nil, err
	}
	return &waits.AlertGate{Source: p, URL: a.url, Filter: a.filter, Proceed: a.unreachable == "proceed",
		Log: log.Named("alerts")}, nil
}
