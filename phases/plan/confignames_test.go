package plan

import (
	"errors"
	"strings"
	"testing"
)

func TestConfigRule(t *testing.T) {
	def, err := ParseConfigPattern(DefaultConfigPattern)
	if err != nil {
		t.Fatal(err)
	}
	wide, err := ParseConfigPattern("^(rendered|custom)-.+$")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pattern ConfigPattern
		pool    string
		name    string
		ok      bool
	}{
		{def, "worker", "rendered-worker-1a2b3c", true},
		{def, "worker", "99-worker-ssh", false},
		{def, "worker", "rendered-master-1a2b3c", false},
		{def, "worker", "rendered-worker-", false},
		{def, "worker", "xrendered-worker-1", false},
		// Issue 27: another pool whose name extends this one's.
		{def, "worker", "rendered-worker-rt-0123456789abcdef0123456789abcdef", false},
		{def, "worker-rt", "rendered-worker-rt-0123456789abcdef0123456789abcdef", true},
		{def, "worker", "rendered-worker-0123456789abcdef0123456789abcdef", true},
		{def, "worker", "rendered-worker-1.2", false},
		{def, "infra", "rendered-infra-7", true},
		{def, "a.b", "rendered-axb-7", false}, // the pool is a literal, not a pattern
		{def, "a.b", "rendered-a.b-7", true},
		{wide, "worker", "custom-7", true},
		{wide, "worker", "99-worker-ssh", false},
		{ConfigPattern{}, "worker", "99-worker-ssh", true},
	}
	for _, tt := range tests {
		err := tt.pattern.For(tt.pool).Check(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("pattern %q pool %s name %s: %v, want ok=%v", tt.pattern, tt.pool, tt.name, err, tt.ok)
		}
		var ce *ConfigError
		if err != nil && (!errors.As(err, &ce) || ce.Object != tt.name || !strings.Contains(err.Error(), `pool "`+tt.pool+`"`)) {
			t.Errorf("%s: %v, want a ConfigError naming the config and the pool", tt.name, err)
		}
	}
	if _, err := ParseConfigPattern("rendered-(["); err == nil {
		t.Error("a pattern that does not compile was accepted")
	}
}
