package hostfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

func strp(s string) *string { return &s }

func TestUnits(t *testing.T) {
	node, f := newNode(t)
	dir := "etc/systemd/system/"
	put(t, node, dir+"app.service.d/99-admin.conf", "admin", 0o644)
	put(t, node, dir+"app.service.d/20-vendor.conf", "vendor", 0o600)
	tx, err := f.BeginTxn("units")
	if err != nil {
		t.Fatal(err)
	}
	u := plan.Unit{
		Name:     "app.service",
		Contents: strp("[Service]\nExecStart=/bin/app\n"),
		Dropins:  map[string]string{"10-a.conf": "a", "20-vendor.conf": "ours", "30-c.conf": "c"},
	}
	if err := tx.WriteUnit(u); err != nil {
		t.Fatal(err)
	}
	if err := f.CheckUnit(u); err != nil {
		t.Fatalf("check after write: %v", err)
	}
	if got := stateOf(t, filepath.Join(node, dir+"app.service.d/10-a.conf")); got.Mode != 0o644 {
		t.Errorf("drop-in mode %04o", got.Mode)
	}

	// Drop two drop-ins and the unit's contents: what we wrote goes (the
	// vendor drop-in comes back), the admin's drop-in stays.
	u2 := plan.Unit{Name: "app.service", Dropins: map[string]string{"10-a.conf": "a"}}
	if err := tx.WriteUnit(u2); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"app.service": "", "app.service.d/30-c.conf": "",
		"app.service.d/10-a.conf": "a", "app.service.d/20-vendor.conf": "vendor", "app.service.d/99-admin.conf": "admin",
	}
	for p, data := range want {
		got := stateOf(t, filepath.Join(node, dir+p))
		if (data == "" && got.Kind != "absent") || (data != "" && got.Data != data) {
			t.Errorf("%s = %+v, want %q", p, got, data)
		}
	}

	// A drift is reported by path.
	put(t, node, dir+"app.service.d/10-a.conf", "drift", 0o644)
	if err := f.CheckUnit(u2); err == nil || !strings.Contains(err.Error(), "/etc/systemd/system/app.service.d/10-a.conf: contents differ") {
		t.Errorf("check of drift: %v", err)
	}

	if err := tx.RemoveUnit(u2); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(node, dir+"app.service.d"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "20-vendor.conf 99-admin.conf" {
		t.Errorf("drop-ins left: %v", names)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestUnitNamesValidated(t *testing.T) {
	_, f := newNode(t)
	tx, err := f.BeginTxn("bad")
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	for _, u := range []plan.Unit{
		{Name: "../x.service", Contents: strp("")},
		{Name: "x.service", Dropins: map[string]string{"../../passwd": ""}},
	} {
		if err := tx.WriteUnit(u); err == nil {
			t.Errorf("WriteUnit(%+v) succeeded", u)
		}
	}
}

func TestSSHKeys(t *testing.T) {
	node, f := newNode(t)
	mkdir(t, node, "var/home/core", 0o700, 1000)
	tx, err := f.BeginTxn("ssh")
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"ssh-ed25519 AAAA one", "ssh-rsa BBBB two"}
	if err := tx.WriteSSHKeys("core", keys); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, filepath.Join(node, "var/home/core/.ssh")); got.Mode != 0o700 || got.UID != 1000 || got.GID != 1000 {
		t.Errorf(".ssh = %+v", got)
	}
	want := fileState{Kind: "file", Data: "ssh-ed25519 AAAA one\nssh-rsa BBBB two\n", Mode: 0o600, UID: 1000, GID: 1000}
	if got := stateOf(t, filepath.Join(node, "var/home/core/.ssh/authorized_keys")); got != want {
		t.Errorf("authorized_keys = %+v, want %+v", got, want)
	}
	if err := f.CheckSSHKeys("core", keys); err != nil {
		t.Errorf("check: %v", err)
	}
	err = f.CheckSSHKeys("core", keys[:1])
	if err == nil || !strings.Contains(err.Error(), "/var/home/core/.ssh/authorized_keys: contents differ") {
		t.Errorf("check of other keys: %v", err)
	}
}
