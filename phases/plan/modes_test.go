package plan

import (
	"fmt"
	"io/fs"
	"testing"

	"github.com/coreos/go-semver/semver"
)

// Setuid, setgid and sticky are masked for every spec before 3.6.0, as
// Ignition masks them; a mode without them is kept whatever the spec.
func TestFileModeSpecialBits(t *testing.T) {
	tests := []struct {
		version string
		raw     int
		want    fs.FileMode
	}{
		{"3.0.0", 0o4755, 0o755},
		{"3.2.0", 0o6755, 0o755},
		{"3.4.0", 0o1777, 0o777},
		{"3.5.0", 0o7777, 0o777},
		{"3.5.0", 0o640, 0o640},
		{"3.6.0", 0o4755, 0o4755},
		{"3.6.0-experimental", 0o2755, 0o2755},
		{"4.0.0", 0o1755, 0o1755},
	}
	for _, tt := range tests {
		if got := fileMode(*semver.New(tt.version), tt.raw); got != tt.want {
			t.Errorf("spec %s, mode %#o: got %#o, want %#o", tt.version, tt.raw, got, tt.want)
		}
	}
}

// The parsed config (what `nodeconfd plan` shows and the write applies)
// holds the masked mode for each accepted spec.
func TestParseMasksSpecialBits(t *testing.T) {
	for _, v := range []string{"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"} {
		body := fmt.Sprintf(`"storage":{"files":[{"path":"/usr/local/bin/tool","mode":%d,"contents":{"source":"data:,x"}}]}`, 0o4755)
		cfg, err := ParseWithLimits(machineConfig("rendered-a", ignitionJSON(v, body)), Limits{})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if got := cfg.Files["/usr/local/bin/tool"].Mode; got != 0o755 {
			t.Errorf("%s: mode %#o, want 0755", v, got)
		}
	}
}
