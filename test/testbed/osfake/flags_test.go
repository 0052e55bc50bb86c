package osfake

import (
	"reflect"
	"testing"
)

// The fake reads its options as the real tools do: "--" ends them, and
// --help before it is a request for help, not an argument.
func TestParseFlags(t *testing.T) {
	tests := []struct {
		args       []string
		positional []string
		help       bool
	}{
		{[]string{"--experimental", "ref"}, []string{"ref"}, false},
		{[]string{"--experimental", "--", "ref"}, []string{"ref"}, false},
		{[]string{"--", "--help"}, []string{"--help"}, false},
		{[]string{"--", "-x", "y"}, []string{"-x", "y"}, false},
		{[]string{"--help"}, nil, true},
		{[]string{"-h", "ref"}, []string{"ref"}, true},
	}
	for _, tt := range tests {
		fl, err := parseFlags(tt.args, []string{"experimental"}, nil, nil)
		if err != nil || !reflect.DeepEqual(fl.positional, tt.positional) || fl.help != tt.help {
			t.Errorf("parseFlags(%q) = %q help=%v, %v; want %q help=%v", tt.args, fl.positional, fl.help, err, tt.positional, tt.help)
		}
	}
	if _, err := parseFlags([]string{"--bogus"}, nil, nil, nil); err == nil {
		t.Error("parseFlags(--bogus) took an unknown option")
	}
}
