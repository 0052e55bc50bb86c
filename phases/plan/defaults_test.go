package plan

import (
	"os"
	"strings"
	"testing"
)

// docs/disruption-policy.md writes the default table out: every default
// rule is a row there with its actions, and no other row claims one.
func TestDocumentedDefaults(t *testing.T) {
	doc, err := os.ReadFile("../../docs/disruption-policy.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, r := range DefaultRules() {
		what := "`" + r.Path + "`"
		if r.Unit != "" {
			what = "unit `" + r.Unit + "`"
		}
		row := "| " + what + " | " + DescribeActions(r.Actions) + " | "
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/disruption-policy.md has no row %q", row)
		}
		rows++
	}
	if !strings.Contains(string(doc), "| SSH keys (and core's password hash) | "+DescribeActions(DefaultSSHKeyActions())+" |") {
		t.Errorf("docs/disruption-policy.md does not give the SSH keys' default")
	}
	table := string(doc)[strings.Index(string(doc), "## The default table"):]
	table = table[:strings.Index(table, "\n## ")]
	if got := strings.Count(table, "\n| `") + strings.Count(table, "\n| unit `"); got != rows {
		t.Errorf("docs/disruption-policy.md's table has %d rules, the code %d", got, rows)
	}
}
