package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The daemon has its own small typed client (daemon/kube) instead of
// client-go's generated clientset and kubectl's libraries: they link every
// API group's types and cost the binary and its idle memory megabytes. This
// guard fails as soon as either comes back into the binary's dependencies.
func TestNoClientsetInBinary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/client-go/kubernetes", "k8s.io/kubectl"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("the binary depends on %s (banned: %s)", pkg, banned)
			}
		}
	}
}
