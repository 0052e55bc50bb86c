package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/preview"
	"github.com/nodeconfd/nodeconfd/test/testbed/corpus"
)

// Every case of the hostile corpus that needs no node set-up and no OS
// updater is refused by `nodeconfd plan` off the node with the field and
// node state the corpus says prepare refuses it with on a real node
// (TestHostileCorpus): the preview and the update agree on each. The few
// that only the node's side refuses (its passwd, group, folder owners, the
// users SSH keys are given to) are
// previewed as applied with the note that those were not checked; plan
// --root-mount checks them (TestPlanAgreesWithUpdate).
func TestPlanHostileCorpus(t *testing.T) {
	dir := "../../test/e2e/testdata/hostile"
	cases, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "base.yaml")
	if err := os.WriteFile(base, []byte("kind: MachineConfig\nmetadata: {name: hostile-base}\nspec:\n  config: {ignition: {version: 3.4.0}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checked, nodeOnly := 0, 0
	for _, c := range cases {
		if len(c.Setup) > 0 || c.OS != "" {
			continue // the node's side: TestHostileCorpus
		}
		var out, errOut bytes.Buffer
		code := runPlan([]string{"--current", base, "--desired", filepath.Join(dir, c.File), "-o", "json",
			"--allowed-config-pattern", "^(rendered|hostile)-.+$"}, &out, &errOut)
		var r preview.Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Errorf("%s: exit %d, %v\n%s", c.File, code, err, errOut.String())
			continue
		}
		if code == 0 && r.NotPreviewed != "" && nodeSide(c.Field) {
			nodeOnly++
			continue
		}
		if code != 1 || r.Refusal == nil || r.Refusal.State != c.State || !strings.Contains(r.Refusal.Message, c.Field) {
			t.Errorf("%s: exit %d, refusal %+v; want exit 1, state %s, naming %s", c.File, code, r.Refusal, c.State, c.Field)
		}
		checked++
	}
	t.Logf("%d of %d cases refused by the preview off the node; %d left to the node's side", checked, len(cases), nodeOnly)
	if nodeOnly > 4 {
		t.Errorf("%d cases are refused only on the node; want at most 4", nodeOnly)
	}
}

// nodeSide reports whether field is one Host.Preflight refuses.
func nodeSide(field string) bool {
	return strings.HasSuffix(field, ".user.name") || strings.HasSuffix(field, ".group.name") || strings.HasSuffix(field, ".path") ||
		strings.HasSuffix(field, ".sshAuthorizedKeys")
}
