package plan

import (
	"errors"
	"fmt"
	"testing"
)

// Numeric owner IDs outside 0..2^32-2 are refused naming the field; the
// bounds themselves are fine.
func TestParseOwnerIDs(t *testing.T) {
	for _, tt := range []struct {
		owner string
		field string // "" when the config is fine
	}{
		{`"user":{"id":0},"group":{"id":0}`, ""},
		{`"user":{"id":4294967294},"group":{"id":4294967294}`, ""},
		{`"user":{"id":-1}`, "spec.config.storage.files[1].user.id"},
		{`"user":{"id":4294967295}`, "spec.config.storage.files[1].user.id"},
		{`"user":{"id":4294967296}`, "spec.config.storage.files[1].user.id"},
		{`"group":{"id":-1}`, "spec.config.storage.files[1].group.id"},
		{`"group":{"id":4294967296}`, "spec.config.storage.files[1].group.id"},
	} {
		t.Run(tt.owner, func(t *testing.T) {
			raw := ignitionJSON("3.5.0", fmt.Sprintf(`"storage":{"files":[{"path":"/etc/ok"},{"path":"/etc/a",%s}]}`, tt.owner))
			_, err := Parse(machineConfig("rendered-x", raw))
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("Parse: %v, want a ConfigError at %s", err, tt.field)
			}
		})
	}
}
