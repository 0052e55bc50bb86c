package main

import (
	"strings"
	"testing"
)

func TestWaitFlags(t *testing.T) {
	o, err := parseFlags([]string{"--node-name", "n1",
		"--maintenance-window", "Mon-Fri 22:00-06:00 Europe/Berlin", "--maintenance-window", "Sat,Sun 00:00-24:00; Wed 12:00-13:00 UTC",
		"--blocking-pod-selector", "app in (backup,batch)"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.waits.windows) != 3 || o.waits.blockingSel.String() != "app in (backup,batch)" {
		t.Errorf("waits %+v", o.waits)
	}
	for _, tc := range []struct{ args, want string }{
		{"--maintenance-window=Mon 25:00-26:00", `flag -maintenance-window: window "Mon 25:00-26:00"`},
		{"--maintenance-window=Mon 10:00-11:00 Nowhere/City", "time zone"},
		{"--blocking-pod-selector=app in (", "--blocking-pod-selector"},
	} {
		if _, err := parseFlags([]string{"--node-name", "n1", tc.args}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

func TestAlertFlags(t *testing.T) {
	o, err := parseFlags([]string{"--node-name", "n1", "--prometheus-url", "http://prometheus.monitoring:9090",
		"--alert-ignore-regexp", "Watchdog|InfoInhibitor", "--alert-label-selector", "severity in (critical,warning)",
		"--alerts-unreachable", "proceed"})
	if err != nil {
		t.Fatal(err)
	}
	f := o.waits.alerts.filter
	if f.Names != nil || f.Ignore == nil || !f.Ignore.MatchString("Watchdog") || f.Ignore.MatchString("WatchdogX") ||
		f.Labels.String() != "severity in (critical,warning)" {
		t.Errorf("filter %+v", f)
	}
	sel := "--alert-label-selector=severity=critical"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--alerts-unreachable=maybe"}, "--alerts-unreachable"},
		{[]string{"--alert-name-regexp=Node.*"}, "need --prometheus-url"},
		{[]string{"--prometheus-url=ftp://prom", sel}, "--prometheus-url"},
		{[]string{"--prometheus-url=http://", sel}, "--prometheus-url"},
		{[]string{"--prometheus-url=http://user:secret@prom:9090", sel}, "--prometheus-url"},
		// No selection is no default of every alert: it is refused, the ignore list alone too.
		{[]string{"--prometheus-url=http://prom:9090"}, "say which alerts hold updates"},
		{[]string{"--prometheus-url=http://prom:9090", "--alert-ignore-regexp=Watchdog"}, "say which alerts hold updates"},
	} {
		if _, err := parseFlags(append([]string{"--node-name", "n1"}, tc.args...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	for _, tc := range []struct{ flag, value string }{
		{"--alert-name-regexp", "Node("}, {"--alert-ignore-regexp", "[x"}, {"--alert-label-selector", "severity in ("},
	} {
		_, err := parseFlags([]string{"--node-name", "n1", "--prometheus-url", "http://prom:9090", "--alert-name-regexp=.+",
			tc.flag, tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s %s: %v, want an error naming the flag", tc.flag, tc.value, err)
		}
	}
}
