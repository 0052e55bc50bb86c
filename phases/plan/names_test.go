package plan

import "testing"

func TestNameChecks(t *testing.T) {
	tests := []struct {
		check func(string) string
		in    string
		ok    bool
	}{
		{checkPath, "/etc/a", true},
		{checkPath, "", false},
		{checkPath, "/", false},
		{checkPath, "etc/a", false},
		{checkPath, "/etc/./a", false},
		{checkPath, "/etc/a/", false},
		{checkPath, "/../a", false},
		{checkUnitName, "foo.service", true},
		{checkUnitName, "getty@tty1.service", true},
		{checkUnitName, "getty@.service", true},
		{checkUnitName, `dev-disk-by\x2dlabel-x.device`, true},
		{checkUnitName, "var-lib.mount", true},
		{checkUnitName, "foo", false},
		{checkUnitName, ".service", false},
		{checkUnitName, "@x.service", false},
		{checkUnitName, "a@b@c.service", false},
		{checkUnitName, "a/b.service", false},
		{checkUnitName, "a b.service", false},
		{checkUnitName, "foo.conf", false},
		{checkDropinName, "10-a.conf", true},
		{checkDropinName, "10-a", false},
		{checkDropinName, ".conf", false},
		{checkDropinName, ".hidden.conf", false},
		{checkDropinName, "a/b.conf", false},
	}
	for _, tt := range tests {
		if msg := tt.check(tt.in); (msg == "") != tt.ok {
			t.Errorf("check(%q) = %q, want ok=%v", tt.in, msg, tt.ok)
		}
	}
}
