package manifests

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestNodeStatusFieldsNamed: the policy that holds the daemon's status
// writes to the lifecycle conditions (nodeconfd-own-node-status) names
// every field of NodeStatus of the k8s.io/api the module builds with, as
// CEL cannot compare "the status but its conditions"; a field that a new
// release adds and the policy does not name would be the daemon's to write.
func TestNodeStatusFieldsNamed(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "manifests", "04-admission-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, policy, ok := strings.Cut(string(data), "name: nodeconfd-own-node-status\nspec:")
	if !ok {
		t.Fatal("no ValidatingAdmissionPolicy nodeconfd-own-node-status in 04-admission-policy.yaml")
	}
	policy, _, _ = strings.Cut(policy, "\n---")
	typ := reflect.TypeFor[corev1.NodeStatus]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "conditions" {
			continue // compared but the lifecycle types (variables.others)
		}
		want := "object.?status.?" + name + " == oldObject.?status.?" + name + " "
		if !strings.Contains(policy+" ", want) && !strings.Contains(policy, want[:len(want)-1]+"\n") {
			t.Errorf("nodeconfd-own-node-status does not compare status.%s: want %q", name, strings.TrimSpace(want))
		}
	}
}
