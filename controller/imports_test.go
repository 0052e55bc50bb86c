package controller_test

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/nodeconfd/nodeconfd"

// sharedPhases are the sub-packages of phases the controller may import:
// pure decisions both processes make (the config's rules, the pool rule,
// the render, the windows), not the steps of an update.
var sharedPhases = []string{"plan", "pools", "render", "window"}

// refusal says why the controller must not import path ("" when it may):
// the daemon's packages and the update's steps are the daemon's alone; what
// both processes need lives in names, cluster/... and internal/... (issue 42).
func refusal(path string) string {
	rel, ok := strings.CutPrefix(path, module+"/")
	switch {
	case !ok:
		return ""
	case rel == "daemon" || strings.HasPrefix(rel, "daemon/"):
		return "the daemon's"
	case rel == "phases":
		return "the update's steps"
	case strings.HasPrefix(rel, "phases/"):
		sub, _, _ := strings.Cut(strings.TrimPrefix(rel, "phases/"), "/")
		if !slices.Contains(sharedPhases, sub) {
			return "a part of the update, not one of the shared decisions " + strings.Join(sharedPhases, ", ")
		}
	}
	return ""
}

// TestControllerImportsNoDaemon walks the imports of every package under
// controller/, its tests' included, through the module's own packages, and
// fails naming each chain that reaches a package of the daemon or the
// steps. It reads the sources (go/build), so it needs no build and no
// network.
func TestControllerImportsNoDaemon(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	err = filepath.WalkDir(filepath.Join(root, "controller"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			roots = append(roots, module+"/"+filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// from is how each package was reached: the importer, "" for a root.
	from := map[string]string{}
	queue := []string{}
	for _, r := range roots {
		from[r] = ""
		queue = append(queue, r)
	}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if why := refusal(path); why != "" {
			t.Errorf("the controller imports %s (%s): %s", path, why, chain(from, path))
			continue
		}
		for _, imp := range imports(t, root, path, from[path] == "") {
			if _, seen := from[imp]; !seen && strings.HasPrefix(imp, module+"/") {
				from[imp] = path
				queue = append(queue, imp)
			}
		}
	}
	if len(from) < len(roots)+3 {
		t.Fatalf("walked %d packages from %d roots: the walk found too little to prove anything", len(from), len(roots))
	}
}

// imports lists the imports of the module's package path; with tests, its
// test files' too.
func imports(t *testing.T, root, path string, tests bool) []string {
	t.Helper()
	dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(path, module)))
	pkg, err := build.ImportDir(dir, 0)
	if _, none := err.(*build.NoGoError); none {
		return nil
	}
	if err != nil {
		t.Fatalf("reading package %s: %v", path, err)
	}
	out := slices.Clone(pkg.Imports)
	if tests {
		out = append(out, pkg.TestImports...)
		out = append(out, pkg.XTestImports...)
	}
	return out
}

// chain is the import path from a root of the walk to path.
func chain(from map[string]string, path string) string {
	hops := []string{strings.TrimPrefix(path, module+"/")}
	for p := from[path]; p != ""; p = from[p] {
		hops = append([]string{strings.TrimPrefix(p, module+"/")}, hops...)
	}
	return strings.Join(hops, " → ")
}
