package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// celSince is when the API server's CEL environment gained each library
// the manifests may use (k8s.io/apiserver pkg/cel/environment/base.go,
// each entry's IntroducedVersion), found by a mark in an expression. A
// manifest that uses one cannot be applied to an older API server: its
// CRD or policy is refused as not compiling.
var celSince = []struct {
	mark  *regexp.Regexp
	minor int
	what  string
}{
	{regexp.MustCompile(`\bformat\.\w+\(\)`), 31, "the format library"},
	{regexp.MustCompile(`\b(isSemver|semver)\(`), 33, "the semver library"},
	{regexp.MustCompile(`\.(all|exists|existsOne|transformList|transformMap)\(\w+,\s*\w+,`), 32, "two-variable comprehensions"},
	{regexp.MustCompile(`\b(isIP|isCIDR|ip|cidr)\(`), 30, "the IP and CIDR libraries"},
	{regexp.MustCompile(`\bsets\.\w+\(`), 29, "the sets library"},
	{regexp.MustCompile(`\.(orValue|hasValue)\(|\?\.`), 28, "optional types"},
	{regexp.MustCompile(`\b(isQuantity|quantity)\(`), 28, "the quantity library"},
}

// apiSince is when an API the manifests create went GA (served as v1).
var apiSince = map[string]int{
	"admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy":        30,
	"admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding": 30,
}

// TestMinimumKubernetesVersion checks that the README states the Kubernetes
// version the shipped objects need: the newest of the CEL libraries their
// expressions use and the APIs they create.
func TestMinimumKubernetesVersion(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "manifests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	need, why := 0, ""
	apiVersion := regexp.MustCompile(`(?m)^apiVersion: (\S+)\nkind: (\S+)`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, c := range celSince {
			if m := c.mark.FindString(text); m != "" && c.minor > need {
				need, why = c.minor, filepath.Base(f)+" uses "+c.what+" ("+m+")"
			}
		}
		for _, m := range apiVersion.FindAllStringSubmatch(text, -1) {
			if v := apiSince[m[1]+" "+m[2]]; v > need {
				need, why = v, filepath.Base(f)+" creates "+m[2]+" "+m[1]
			}
		}
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`Kubernetes 1\.(\d+) or newer`).FindStringSubmatch(string(readme))
	if m == nil {
		t.Fatal(`README.md does not say "Kubernetes 1.N or newer"`)
	}
	stated, _ := strconv.Atoi(m[1])
	if stated != need {
		t.Errorf("README.md says Kubernetes 1.%d or newer; the manifests need 1.%d: %s", stated, need, why)
	}
	t.Logf("the manifests need Kubernetes 1.%d: %s", need, why)
}
