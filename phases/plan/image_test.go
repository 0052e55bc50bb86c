package plan

import "testing"

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

