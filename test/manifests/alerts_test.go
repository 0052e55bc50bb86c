package manifests

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// rulesDir holds the Prometheus alerting rules and their unit tests; its
// own folder, so that `kubectl apply -f manifests/` leaves it out.
const rulesDir = repoRoot + "/manifests/prometheus"

// TestAlertRules checks the alerting rules with `promtool check rules` and
// runs their unit tests with `promtool test rules`; every alert must have a
// test, and every metric an alert reads must be one docs/metrics.md lists.
func TestAlertRules(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	promtool, err := testbed.Promtool(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testbed.RunPromtool(ctx, promtool, rulesDir, nil, "check", "rules", "--lint-fatal", "alerts.yaml"); err != nil {
		t.Error(err)
	}
	if _, err := testbed.RunPromtool(ctx, promtool, rulesDir, nil, "test", "rules", "alerts_test.yaml"); err != nil {
		t.Error(err)
	}

	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
			} `json:"alert_rule_test"`
		}
	}
	readYAML(t, "alerts.yaml", &rules)
	readYAML(t, "alerts_test.yaml", &tests)
	var tested []string
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			tested = append(tested, a.Alertname)
		}
	}
	docs, err := os.ReadFile(filepath.Join(repoRoot, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	metric := regexp.MustCompile(`nodeconfd_[a-z_]+`)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if !slices.Contains(tested, r.Alert) {
				t.Errorf("alert %s has no test in alerts_test.yaml", r.Alert)
			}
			for _, m := range metric.FindAllString(r.Expr, -1) {
				if !regexp.MustCompile("`" + m + "`").Match(docs) {
					t.Errorf("alert %s reads %s, which docs/metrics.md does not list", r.Alert, m)
				}
			}
		}
	}
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rulesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
