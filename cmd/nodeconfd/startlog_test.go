package main

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The start line names the version and the flags given, never the value
// of a flag that may hold a secret.
func TestStartLineRedacts(t *testing.T) {
	o, err := parseFlags([]string{"--node-name", "n1", "--drain-timeout", "2h",
		"--notify-url", "https://hooks.example.com/services/T0/B0/secret-token",
		"--health-command", "curl -H 'Authorization: Bearer hunter2' http://x",
		"--prometheus-url", "https://prom.example.com/token-in-path", "--alert-name-regexp", ".+"})
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	logVersion(zap.New(core), "start", o.given)
	if logs.Len() != 1 {
		t.Fatalf("%d lines, want one", logs.Len())
	}
	line := logs.All()[0]
	fields := line.ContextMap()
	flags, _ := fields["flags"].(map[string]any)
	if line.Message != "Starting nodeconfd" || fields["command"] != "start" || fields["version"] != version ||
		flags["drain-timeout"] != "2h0m0s" {
		t.Errorf("fields %v, want the version and --drain-timeout=2h0m0s", fields)
	}
	if _, ok := flags["root-mount"]; ok {
		t.Error("a flag left at its default is logged")
	}
	for _, secret := range []string{"secret-token", "hunter2", "token-in-path"} {
		for k, v := range flags {
			if s, _ := v.(string); strings.Contains(s, secret) {
				t.Errorf("--%s logged as %q", k, s)
			}
		}
	}
	if flags["prometheus-url"] != "https://prom.example.com/<redacted>" || flags["notify-url"] != "<redacted>" {
		t.Errorf("flags %v, want the Prometheus host and the webhook redacted", flags)
	}
}
