package plan

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Which passwd entries give SSH keys, which cannot be applied in place, and
// which are refused outright.
func TestParsePasswdUsers(t *testing.T) {
	field := func(i string) string { return "spec.config.passwd.users[" + i + "].sshAuthorizedKeys" }
	for _, tt := range []struct {
		name           string
		users          string
		keys           map[string]UserKeys
		unreconcilable []string
		refused        string // field of a parse error
	}{
		{name: "core's keys", users: `{"name":"core","sshAuthorizedKeys":["c1"]}`,
			keys: map[string]UserKeys{"core": {User: "core", Field: field("0"), Keys: []string{"c1"}}}},
		{name: "another user's keys", users: `{"name":"debian","sshAuthorizedKeys":["d1","d2"]}`,
			keys: map[string]UserKeys{"debian": {User: "debian", Field: field("0"), Keys: []string{"d1", "d2"}}}},
		{name: "core and root", users: `{"name":"core","sshAuthorizedKeys":["c1"]},{"name":"root","sshAuthorizedKeys":["r1"]}`,
			keys: map[string]UserKeys{"core": {User: "core", Field: field("0"), Keys: []string{"c1"}},
				"root": {User: "root", Field: field("1"), Keys: []string{"r1"}}}},
		// A name alone asks nothing the daemon does in place.
		{name: "a name alone", users: `{"name":"debian"}`},
		{name: "an empty key list", users: `{"name":"debian","sshAuthorizedKeys":[]}`},
		// Only core's password hash is set in place, as upstream sets it.
		{name: "another user's password hash", users: `{"name":"debian","passwordHash":"$6$x","sshAuthorizedKeys":["d1"]}`,
			keys:           map[string]UserKeys{"debian": {User: "debian", Field: field("0"), Keys: []string{"d1"}}},
			unreconcilable: []string{"spec.config.passwd.users[name=debian]"}},
		{name: "another user's groups", users: `{"name":"debian","groups":["sudo"]}`,
			unreconcilable: []string{"spec.config.passwd.users[name=debian]"}},
		{name: "a user to delete", users: `{"name":"debian","shouldExist":false}`,
			unreconcilable: []string{"spec.config.passwd.users[name=debian]"}},
		{name: "a control character in a name", users: `{"name":"deb\u001bian","sshAuthorizedKeys":["d1"]}`,
			refused: "spec.config.passwd.users[0].name"},
		{name: "a bidi control in a name", users: `{"name":"core"},{"name":"deb\u202eian","sshAuthorizedKeys":["d1"]}`,
			refused: "spec.config.passwd.users[1].name"},
		{name: "a user twice", users: `{"name":"debian","sshAuthorizedKeys":["d1"]},{"name":"debian","sshAuthorizedKeys":["d2"]}`,
			refused: "spec.config.passwd.users"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(machineConfig("m", ignitionJSON("3.5.0", `"passwd":{"users":[`+tt.users+`]}`)))
			if tt.refused != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || !strings.HasPrefix(ce.Field, tt.refused) {
					t.Fatalf("Parse: %v, want a refusal at %s", err, tt.refused)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.SSHKeys, tt.keys) {
				t.Errorf("SSH keys %+v, want %+v", got.SSHKeys, tt.keys)
			}
			if keys := SortedKeys(got.Unreconcilable); len(keys)+len(tt.unreconcilable) > 0 && !reflect.DeepEqual(keys, tt.unreconcilable) {
				t.Errorf("unreconcilable %q, want %q", keys, tt.unreconcilable)
			}
		})
	}
}

// The per-user diff: each user whose keys differ, sorted by name, with the
// desired keys, or none and the current field when the user's keys go.
func TestCompareSSHKeysPerUser(t *testing.T) {
	uk := func(user, field string, keys ...string) UserKeys {
		return UserKeys{User: user, Field: field, Keys: keys}
	}
	cfg := func(ks ...UserKeys) Config {
		c := Config{}
		for _, k := range ks {
			if c.SSHKeys == nil {
				c.SSHKeys = map[string]UserKeys{}
			}
			c.SSHKeys[k.User] = k
		}
		return c
	}
	for _, tt := range []struct {
		name             string
		current, desired Config
		want             []UserKeys
	}{
		{"none", cfg(), cfg(), nil},
		{"unchanged, other fields", cfg(uk("core", "f0", "a")), cfg(uk("core", "f1", "a")), nil},
		{"a user added", cfg(uk("core", "f0", "a")), cfg(uk("core", "f0", "a"), uk("alice", "f1", "b")),
			[]UserKeys{uk("alice", "f1", "b")}},
		{"a key changed", cfg(uk("alice", "f0", "a")), cfg(uk("alice", "f0", "a", "b")), []UserKeys{uk("alice", "f0", "a", "b")}},
		{"keys reordered", cfg(uk("alice", "f0", "a", "b")), cfg(uk("alice", "f0", "b", "a")), []UserKeys{uk("alice", "f0", "b", "a")}},
		{"a user's keys removed", cfg(uk("core", "f0", "a"), uk("alice", "f1", "b")), cfg(uk("core", "f0", "a")),
			[]UserKeys{uk("alice", "f1")}},
		{"sorted: removed and added", cfg(uk("zed", "f0", "z"), uk("core", "f1", "a")), cfg(uk("bob", "f0", "b"), uk("core", "f1", "a2")),
			[]UserKeys{uk("bob", "f0", "b"), uk("core", "f1", "a2"), uk("zed", "f0")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Compare(tt.current, tt.desired)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.SSHKeys, tt.want) {
				t.Errorf("SSH keys diff %+v, want %+v", d.SSHKeys, tt.want)
			}
			if d.SSHKeysChanged() != (len(tt.want) > 0) || d.Empty() != (len(tt.want) == 0) {
				t.Errorf("changed %v, empty %v", d.SSHKeysChanged(), d.Empty())
			}
		})
	}
}

// Every user's keys are charged to the config size cap, core's or not.
func TestSSHKeysOfEveryUserCharged(t *testing.T) {
	big := strings.Repeat("k", 600)
	raw := ignitionJSON("3.5.0", `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["c"]},{"name":"debian","sshAuthorizedKeys":["`+big+`"]}]}`)
	_, err := ParseWithLimits(machineConfig("m", raw), Limits{MaxConfigSize: 512})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "spec.config.passwd.users[1].sshAuthorizedKeys" {
		t.Fatalf("Parse: %v, want a refusal of debian's keys over the cap", err)
	}
}
