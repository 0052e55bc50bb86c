package fuzz

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

// fields are the parts of a config that FuzzApplyFields fuzzes one by one:
// raw Ignition bytes rarely mutate into a new path or owner, single fields
// do.
type fields struct {
	path1, path2 string
	data         []byte
	mode         int
	uid          int64
	user, group  string
	unit, dropin string
	sshKey       string
	withBase     bool
}

// FuzzApplyFields is FuzzApply on a well-formed config built from fuzzed
// fields: two files (the first with a mode and an owner by ID or by name),
// a unit with a drop-in, and one SSH key for core.
func FuzzApplyFields(f *testing.F) {
	for _, s := range fieldSeeds() {
		f.Add(s.path1, s.path2, s.data, s.mode, s.uid, s.user, s.group, s.unit, s.dropin, s.sshKey, s.withBase)
	}
	f.Fuzz(func(t *testing.T, path1, path2 string, data []byte, mode int, uid int64, user, group, unit, dropin, sshKey string, withBase bool) {
		s := fields{path1, path2, data, mode, uid, user, group, unit, dropin, sshKey, withBase}
		checkUpdate(t, s.ignition(), "", "", s.withBase)
	})
}

// ignition builds the config; an empty field leaves its part out, and uid
// -2 means no user ID.
func (s fields) ignition() []byte {
	src := "data:;base64," + base64.StdEncoding.EncodeToString(s.data)
	file1 := map[string]any{"path": s.path1, "mode": s.mode, "contents": map[string]any{"source": src}}
	if s.uid != -2 {
		file1["user"] = map[string]any{"id": s.uid}
	} else if s.user != "" {
		file1["user"] = map[string]any{"name": s.user}
	}
	if s.group != "" {
		file1["group"] = map[string]any{"name": s.group}
	}
	files := []any{file1}
	if s.path2 != "" {
		files = append(files, map[string]any{"path": s.path2, "contents": map[string]any{"source": "data:,second"}})
	}
	cfg := map[string]any{"ignition": map[string]any{"version": "3.4.0"}, "storage": map[string]any{"files": files}}
	if s.unit != "" {
		u := map[string]any{"name": s.unit, "contents": "[Unit]\nDescription=fuzz\n"}
		if s.dropin != "" {
			u["dropins"] = []any{map[string]any{"name": s.dropin, "contents": "[Unit]\n"}}
		}
		cfg["systemd"] = map[string]any{"units": []any{u}}
	}
	if s.sshKey != "" {
		cfg["passwd"] = map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []string{s.sshKey}}}}
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		panic(err) // only maps, strings and numbers
	}
	return out
}

// fieldSeeds are plain configs that are written on main.
func fieldSeeds() []fields {
	return []fields{
		{path1: "/etc/a.conf", path2: "/etc/b.conf", data: []byte("a\n"), mode: 0o644, uid: -2},
		{path1: "/etc/sub/dir/a", data: []byte("x"), mode: 0o600, uid: 1000, group: "core", unit: "foo.service",
			dropin: "10-foo.conf"},
		{path1: "/etc/base/a.conf", path2: "/etc/new", data: nil, mode: 0o4755, uid: -2, user: "core", group: "wheel",
			sshKey: "ssh-ed25519 AAAA fuzz", withBase: true},
		{path1: "/usr/local/bin/tool", data: []byte("#!/bin/sh\n"), mode: 0o755, uid: 0, unit: "tool@x.timer"},
	}
}

// The hand-written seeds that should be written are written: the checks
// of the other issue-10 helpers must not refuse plain configs.
func TestSeedsWritten(t *testing.T) {
	for _, s := range fieldSeeds() {
		if !checkUpdate(t, s.ignition(), "", "", s.withBase) {
			t.Errorf("seed %+v refused", s)
		}
	}
	for _, s := range seeds() {
		if s.write && !checkUpdate(t, []byte(s.ignition), s.kargs, s.osImage, s.withBase) {
			t.Errorf("seed %s refused", s.name)
		}
	}
}

// The seeds over a cap are refused in prepare, before anything is written.
func TestSeedsRefused(t *testing.T) {
	for _, s := range seeds() {
		if s.refuse && checkUpdate(t, []byte(s.ignition), s.kargs, s.osImage, s.withBase) {
			t.Errorf("seed %s written, want refused in prepare", s.name)
		}
	}
}
