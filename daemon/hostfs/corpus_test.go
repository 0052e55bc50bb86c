package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/test/testbed/corpus"
)

// corpusDir holds the hostile MachineConfigs run end to end by
// test/e2e/hostile_test.go; the node-side classes are checked here too, on
// a real temporary root shaped like the test node image, so that a case
// fails fast when it stops being refused.
const corpusDir = "../../test/e2e/testdata/hostile"

// nodeSideClasses are the corpus classes refused by Parse or Preflight.
var nodeSideClasses = []string{"owner", "ssh", "nodepath"}

func TestHostileCorpusRefusedBeforeWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	for _, class := range nodeSideClasses {
		paths, err := filepath.Glob(filepath.Join(corpusDir, class+"-*.yaml"))
		if err != nil || len(paths) < 3 {
			t.Fatalf("class %s: %d cases (%v), want at least 3", class, len(paths), err)
		}
		for _, p := range paths {
			t.Run(filepath.Base(p), func(t *testing.T) { checkCorpusCase(t, p) })
		}
	}
}

func checkCorpusCase(t *testing.T, p string) {
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var mc mcfgv1.MachineConfig
	if err := yaml.UnmarshalStrict(data, &mc); err != nil {
		t.Fatal(err)
	}
	field := mc.Annotations["nodeconfd.test/field"]
	if field == "" || mc.Annotations["nodeconfd.test/state"] != "Degraded" {
		t.Fatalf("annotations %v: want a field and state Degraded", mc.Annotations)
	}
	node := imageLikeNode(t)
	applySetup(t, node, mc.Annotations["nodeconfd.test/setup"])
	f, err := Open(node)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := tree(t, node, "var/lib/nodeconfd")
	desired, err := plan.Parse(&mc)
	if err == nil {
		var diff plan.Diff
		if diff, err = plan.Compare(plan.Config{}, desired); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(diff.ChangedFiles[0].Path, "/etc/nodeconfd-canary/") {
			t.Errorf("first file %s, want the canary", diff.ChangedFiles[0].Path)
		}
		err = f.Preflight(plan.Config{}, desired, diff)
	}
	var ce *plan.ConfigError
	if !errors.As(err, &ce) || ce.Object != mc.Name || !strings.Contains(err.Error(), field) {
		t.Fatalf("got %v, want a refusal of %s naming %s", err, mc.Name, field)
	}
	t.Log(err)
	assertSame(t, before, tree(t, node, "var/lib/nodeconfd"))
}

// imageLikeNode is a root shaped like hack/node-image.sh's: user core
// (1000) with its home and ~/.ssh, group nodeconf-a.
func imageLikeNode(t *testing.T) string {
	node := filepath.Join(t.TempDir(), "node")
	put(t, node, "etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/bash\n", 0o644)
	put(t, node, "etc/group", "root:x:0:\ncore:x:1000:\nnodeconf-a:x:1001:core\n", 0o644)
	put(t, node, "etc/shadow", "root:*:1::::::\n", 0o640)
	mkdir(t, node, "etc/systemd/system", 0o755, 0)
	mkdir(t, node, "tmp", 0o1777, 0)
	mkdir(t, node, "home/core/.ssh", 0o700, 1000)
	if err := os.Chmod(filepath.Join(node, "home/core"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(node, "home/core"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	return node
}

// applySetup runs the corpus setup verbs (see package corpus) in node.
func applySetup(t *testing.T, node, setup string) {
	var verbs []string
	for _, line := range strings.Split(setup, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			verbs = append(verbs, line)
		}
	}
	undo, err := corpus.Setup(node, verbs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := undo.Run(); err != nil {
			t.Error(err)
		}
	})
}
