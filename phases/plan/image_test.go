package plan

import (
	"errors"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

func TestSameImage(t *testing.T) {
	img := "quay.io/os@sha256:e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f"
	tests := []struct {
		a, b string
		want bool
	}{
		{"ostree-unverified-registry:" + img, img, true},
		{"ostree-unverified-image:docker://" + img, "docker://" + img, true},
		{"ostree-unverified-registry:" + img, "quay.io/os@sha256:0000", false},
		{"ostree-remote-registry:fedora:" + img, img, false},
		{"ostree-image-signed:registry:" + img, img, false},
		{"fedora:fedora/39/x86_64/silverblue", "fedora:fedora/39/x86_64/silverblue", true},
	}
	for _, tt := range tests {
		if got := SameImage(tt.a, tt.b); got != tt.want {
			t.Errorf("SameImage(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// A bad osImageURL is refused when the config is parsed, naming object and
// field, before anything on the node is touched.
func TestParseRefusesBadImage(t *testing.T) {
	mc := &mcfgv1.MachineConfig{}
	mc.Name = "rendered-x"
	mc.Spec.OSImageURL = "ostree-remote-registry:fedora"
	_, err := Parse(mc)
	var ce *ConfigError
	if !errors.As(err, &ce) || err.Error() != `MachineConfig "rendered-x": spec.osImageURL: image reference "ostree-remote-registry:fedora": want ostree-remote-registry:<remote>:<image>` {
		t.Errorf("Parse: %v", err)
	}
	mc.Spec.OSImageURL = "quay.io/os@sha256:1"
	if _, err := Parse(mc); err != nil {
		t.Errorf("Parse of a good image: %v", err)
	}
}
