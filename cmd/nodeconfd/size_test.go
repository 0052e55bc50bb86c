package main

import (
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

func TestSizeFlags(t *testing.T) {
	tests := []struct {
		args       []string
		file, conf int64
		ok         bool
	}{
		{nil, plan.DefaultMaxFileSize, plan.DefaultMaxConfigSize, true},
		{[]string{"--max-file-size=1Mi", "--max-config-size=8Mi"}, 1 << 20, 8 << 20, true},
		{[]string{"--max-file-size=4096"}, 4096, plan.DefaultMaxConfigSize, true},
		{[]string{"--max-file-size=128Mi"}, 0, 0, false}, // over the config cap
		{[]string{"--max-config-size=0"}, 0, 0, false},
		{[]string{"--max-file-size=1.5"}, 0, 0, false},
		{[]string{"--max-file-size=lots"}, 0, 0, false},
	}
	for _, tt := range tests {
		o, err := parseFlags(append([]string{"--node-name=n"}, tt.args...))
		if (err == nil) != tt.ok {
			t.Errorf("%v: error %v, want ok %v", tt.args, err, tt.ok)
			continue
		}
		if tt.ok && (o.limits.MaxFileSize != tt.file || o.limits.MaxConfigSize != tt.conf) {
			t.Errorf("%v: caps %+v, want %d and %d", tt.args, o.limits, tt.file, tt.conf)
		}
	}
}

func TestCountFlags(t *testing.T) {
	o, err := parseFlags([]string{"--node-name=n", "--max-files=10", "--max-units=20", "--max-path-depth=8"})
	if err != nil {
		t.Fatal(err)
	}
	if o.limits.MaxFiles != 10 || o.limits.MaxUnits != 20 || o.limits.MaxPathDepth != 8 {
		t.Errorf("caps %+v", o.limits)
	}
	if o, _ = parseFlags([]string{"--node-name=n"}); o.limits != plan.DefaultLimits() {
		t.Errorf("default caps %+v, want %+v", o.limits, plan.DefaultLimits())
	}
	for _, bad := range []string{"--max-files=0", "--max-units=-1", "--max-path-depth=x"} {
		if _, err := parseFlags([]string{"--node-name=n", bad}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
