package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/cluster/surge"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

func TestParseFlagsHardenedDefaults(t *testing.T) {
	o, err := parseFlags([]string{"--node-name", "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if o.metrics.addr != "127.0.0.1:8798" {
		t.Errorf("--metrics-address default %q, want loopback", o.metrics.addr)
	}
	if o.metrics.auth != metricsAuthKubernetes {
		t.Errorf("--metrics-auth default %q, want %s", o.metrics.auth, metricsAuthKubernetes)
	}
	if o.configPattern.String() != plan.DefaultConfigPattern {
		t.Errorf("--allowed-config-pattern default %q, want %q", o.configPattern, plan.DefaultConfigPattern)
	}
	if err := o.configPattern.For("worker").Check("99-worker-ssh"); err == nil {
		t.Error("the default rule accepts a fragment")
	}
	if _, err := parseFlags([]string{"--node-name", "n1", "--allowed-config-pattern", "rendered-(["}); err == nil ||
		!strings.Contains(err.Error(), "--allowed-config-pattern") {
		t.Errorf("a pattern that does not compile: %v, want an error naming the flag", err)
	}
	o, err = parseFlags([]string{"--node-name", "n1", "--allowed-config-pattern", ""})
	if err != nil || o.configPattern.For("worker").Check("99-worker-ssh") != nil {
		t.Errorf("an empty pattern: %v, want every name accepted", err)
	}
}

// --drain-last-selector: a malformed selector is refused naming the flag;
// an empty one selects nothing.
func TestDrainLastSelectorFlag(t *testing.T) {
	if _, err := parseFlags([]string{"--node-name", "n1", "--drain-last-selector", "app in (a"}); err == nil ||
		!strings.Contains(err.Error(), "drain-last-selector") {
		t.Errorf("a malformed selector: %v, want an error naming the flag", err)
	}
	o, err := parseFlags([]string{"--node-name", "n1", "--drain-last-selector", "app=store"})
	if err != nil || o.drainLast == nil || o.drainLast.String() != "app=store" {
		t.Errorf("app=store: %v, %v", o.drainLast, err)
	}
	if o, err := parseFlags([]string{"--node-name", "n1", "--drain-last-selector", ""}); err != nil || o.drainLast != nil {
		t.Errorf("an empty selector: %v, %v; want none", o.drainLast, err)
	}
}

// --drain-surge-max past the slots the admission policy admits is refused
// at start, by the daemon and the controller alike, naming the flag and
// the bound; the bound itself is accepted.
func TestDrainSurgeMaxBound(t *testing.T) {
	over := strconv.Itoa(surge.MaxSlots + 1)
	if _, err := parseFlags([]string{"--node-name", "n1", "--drain-surge-max", over}); err == nil ||
		!strings.Contains(err.Error(), "--drain-surge-max "+over+": want 0 to 100") {
		t.Errorf("daemon, --drain-surge-max %s: %v, want an error naming the flag and its bound", over, err)
	}
	if _, err := parseControllerFlags([]string{"--identity", "c1", "--drain-surge-max", over}); err == nil ||
		!strings.Contains(err.Error(), "--drain-surge-max "+over) {
		t.Errorf("controller, --drain-surge-max %s: %v, want an error naming the flag", over, err)
	}
	if _, err := parseFlags([]string{"--node-name", "n1", "--drain-surge-max", strconv.Itoa(surge.MaxSlots)}); err != nil {
		t.Errorf("--drain-surge-max %d: %v, want accepted", surge.MaxSlots, err)
	}
}

// --rendered-config-retention: 5 by default, 0 accepted (pruning off), a
// negative count refused naming the flag.
func TestRenderedConfigRetentionFlag(t *testing.T) {
	if o, err := parseControllerFlags([]string{"--identity", "c1"}); err != nil || o.retention != 5 {
		t.Errorf("default: %d, %v; want 5", o.retention, err)
	}
	if o, err := parseControllerFlags([]string{"--identity", "c1", "--rendered-config-retention", "0"}); err != nil || o.retention != 0 {
		t.Errorf("0: %d, %v; want accepted", o.retention, err)
	}
	if _, err := parseControllerFlags([]string{"--identity", "c1", "--rendered-config-retention", "-1"}); err == nil ||
		!strings.Contains(err.Error(), "--rendered-config-retention -1: must not be negative") {
		t.Errorf("-1: %v, want an error naming the flag", err)
	}
}
