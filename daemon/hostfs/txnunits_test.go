package hostfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// linkUnits is a little systemd over the node's real files, as systemctl
// treats them: a unit file in /etc/systemd/system or /usr/lib/systemd/system,
// a mask is /etc/systemd/system/<unit> -> /dev/null, enabling links the
// unit into <WantedBy>.wants, disabling removes every such link.
type linkUnits struct {
	node    string
	calls   []string
	reloads int
}

func (u *linkUnits) etc(rel string) string { return filepath.Join(u.node, "etc/systemd/system", rel) }

// file returns the unit file's contents; ok is false when there is none.
func (u *linkUnits) file(unit string) (string, bool) {
	for _, p := range []string{u.etc(unit), filepath.Join(u.node, "usr/lib/systemd/system", unit)} {
		if target, err := os.Readlink(p); err == nil && target == "/dev/null" {
			continue
		}
		if data, err := os.ReadFile(p); err == nil {
			return string(data), true
		}
	}
	return "", false
}

var wantedBy = regexp.MustCompile(`(?m)^WantedBy=(\S+)$`)

func (u *linkUnits) links(unit string) []string {
	m, _ := filepath.Glob(u.etc("*.wants/" + unit))
	return m
}

func (u *linkUnits) IsEnabled(_ context.Context, unit string) (string, error) {
	if target, err := os.Readlink(u.etc(unit)); err == nil && target == "/dev/null" {
		return "masked", nil
	}
	data, ok := u.file(unit)
	switch {
	case !ok:
		return "not-found", nil
	case len(u.links(unit)) > 0:
		return "enabled", nil
	case wantedBy.MatchString(data):
		return "disabled", nil
	}
	return "static", nil
}

func (u *linkUnits) each(verb string, units []string, do func(string) error) error {
	u.calls = append(u.calls, verb+" "+strings.Join(units, " "))
	for _, unit := range units {
		if err := do(unit); err != nil {
			return fmt.Errorf("%s %s: %w", verb, unit, err)
		}
	}
	return nil
}

func (u *linkUnits) Enable(_ context.Context, units ...string) error {
	return u.each("enable", units, func(unit string) error {
		data, ok := u.file(unit)
		if !ok {
			return errors.New("unit file does not exist")
		}
		for _, m := range wantedBy.FindAllStringSubmatch(data, -1) {
			dir := u.etc(m[1] + ".wants")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			os.Remove(filepath.Join(dir, unit))
			if err := os.Symlink("/etc/systemd/system/"+unit, filepath.Join(dir, unit)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (u *linkUnits) Disable(_ context.Context, units ...string) error {
	return u.each("disable", units, func(unit string) error {
		if _, ok := u.file(unit); !ok {
			return errors.New("unit file does not exist")
		}
		for _, l := range u.links(unit) {
			if err := os.Remove(l); err != nil {
				return err
			}
		}
		return nil
	})
}

func (u *linkUnits) Mask(_ context.Context, units ...string) error {
	return u.each("mask", units, func(unit string) error {
		os.MkdirAll(u.etc(""), 0o755)
		if target, err := os.Readlink(u.etc(unit)); err == nil && target == "/dev/null" {
			return nil
		}
		return os.Symlink("/dev/null", u.etc(unit)) // fails over a real file, as systemd does
	})
}

func (u *linkUnits) Unmask(_ context.Context, units ...string) error {
	return u.each("unmask", units, func(unit string) error {
		if target, err := os.Readlink(u.etc(unit)); err == nil && target == "/dev/null" {
			return os.Remove(u.etc(unit))
		}
		return nil
	})
}

func (u *linkUnits) DaemonReload(context.Context) error { u.reloads++; return nil }

const installed = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"

// Every state an update can move a unit from comes back exactly, links
// included, after the update changed the units' files and enablement.
func TestTxnRollbackRestoresUnitEnablement(t *testing.T) {
	node, f := newNode(t)
	sd := &linkUnits{node: node}
	ctx := context.Background()
	// was-enabled: enabled from /usr/lib, gets a new unit file in /etc
	// (WantedBy another target) and is disabled.
	put(t, node, "usr/lib/systemd/system/was-enabled.service", installed, 0o644)
	// was-disabled gets masked; was-masked gets unmasked and enabled;
	// was-static is only unmasked (its content changes).
	put(t, node, "usr/lib/systemd/system/was-disabled.service", installed, 0o644)
	put(t, node, "usr/lib/systemd/system/was-masked.service", installed, 0o644)
	put(t, node, "usr/lib/systemd/system/was-static.service", "[Service]\nExecStart=/bin/true\n", 0o644)
	if err := sd.Enable(ctx, "was-enabled.service"); err != nil {
		t.Fatal(err)
	}
	if err := sd.Mask(ctx, "was-masked.service"); err != nil {
		t.Fatal(err)
	}
	// untouched: enabled, and neither its file nor its state change.
	put(t, node, "usr/lib/systemd/system/untouched.service", installed, 0o644)
	if err := sd.Enable(ctx, "untouched.service"); err != nil {
		t.Fatal(err)
	}
	units := []string{"new.service", "was-enabled.service", "was-disabled.service", "was-masked.service", "was-static.service", "untouched.service"}
	before := tree(t, node, "var/lib/nodeconfd")
	states := map[string]string{}
	for _, u := range units {
		states[u], _ = sd.IsEnabled(ctx, u)
	}
	want := map[string]string{"new.service": "not-found", "was-enabled.service": "enabled", "was-disabled.service": "disabled",
		"was-masked.service": "masked", "was-static.service": "static", "untouched.service": "enabled"}
	for u, s := range want {
		if states[u] != s {
			t.Fatalf("set-up: %s is %s, want %s", u, states[u], s)
		}
	}

	tx, err := f.BeginTxn("units-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.RecordUnitStates(states); err != nil {
		t.Fatal(err)
	}
	for _, u := range []plan.Unit{
		{Name: "new.service", Contents: strp(installed)},
		{Name: "was-enabled.service", Contents: strp(strings.Replace(installed, "multi-user", "graphical", 1))},
		{Name: "was-static.service", Contents: strp("[Service]\nExecStart=/bin/false\n")},
	} {
		if err := tx.WriteUnit(u); err != nil {
			t.Fatal(err)
		}
	}
	steps := []error{
		sd.Enable(ctx, "new.service", "was-enabled.service", "untouched.service"), // graphical.target.wants too
		sd.Disable(ctx, "was-enabled.service"),
		sd.Mask(ctx, "was-disabled.service"),
		sd.Unmask(ctx, "was-masked.service", "was-static.service", "new.service"),
		sd.Enable(ctx, "was-masked.service"),
	}
	if err := errors.Join(steps...); err != nil {
		t.Fatal(err)
	}
	// A crash, and the re-run journals the states it now sees: ignored.
	tx.Close()
	if tx, err = f.BeginTxn("units-1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.RecordUnitStates(map[string]string{"new.service": "enabled", "was-masked.service": "enabled"}); err != nil {
		t.Fatal(err)
	}
	if paths, names := tx.Journaled(); paths != 3 || len(names) != len(units) {
		t.Fatalf("journaled %d paths, units %v; want 3 and %d units", paths, names, len(units))
	}
	if err := tx.Rollback(); err == nil || !strings.Contains(err.Error(), "no systemd") {
		t.Fatalf("Rollback without systemd: %v, want a refusal", err)
	}
	sd.calls = nil
	if err := tx.RollbackWith(ctx, sd); err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if got, _ := sd.IsEnabled(ctx, u); got != want[u] {
			t.Errorf("%s is %s after the rollback, want %s", u, got, want[u])
		}
	}
	after := tree(t, node, "var/lib/nodeconfd")
	for p, w := range before {
		if got := after[p]; got != w {
			t.Errorf("%s: %+v, want %+v", p, got, w)
		}
	}
	for p, got := range after {
		if _, ok := before[p]; !ok && got.Kind != "dir" {
			t.Errorf("%s left: %+v", p, got)
		}
	}
	for _, c := range sd.calls {
		if strings.Contains(c, "untouched") {
			t.Errorf("the rollback touched a unit left as it was: %q", c)
		}
	}
	if sd.reloads != 1 {
		t.Errorf("%d daemon-reloads, want 1", sd.reloads)
	}
	if ids, _ := f.PendingTxns(); len(ids) != 0 {
		t.Errorf("pending after the rollback: %v", ids)
	}
}

// A unit that cannot be put back keeps the journal, and the error says
// which unit is in which state.
func TestTxnRollbackUnitStateMismatchKeepsJournal(t *testing.T) {
	node, f := newNode(t)
	sd := &linkUnits{node: node}
	ctx := context.Background()
	put(t, node, "usr/lib/systemd/system/a.service", "[Service]\nExecStart=/bin/true\n", 0o644)
	tx, err := f.BeginTxn("units-2")
	if err != nil {
		t.Fatal(err)
	}
	// Journaled as enabled, but a static unit cannot be enabled.
	if err := tx.RecordUnitStates(map[string]string{"a.service": "enabled"}); err != nil {
		t.Fatal(err)
	}
	err = tx.RollbackWith(ctx, sd)
	if err == nil || !strings.Contains(err.Error(), "unit a.service: is static, was enabled before the update") {
		t.Fatalf("rollback: %v", err)
	}
	if ids, _ := f.PendingTxns(); len(ids) != 1 {
		t.Errorf("pending after a failed rollback: %v, want the journal kept", ids)
	}
}

func TestRecordUnitStatesRefusesBadEntries(t *testing.T) {
	_, f := newNode(t)
	tx, err := f.BeginTxn("units-3")
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	for _, states := range []map[string]string{{"a/b.service": "enabled"}, {"a.service": ""}, {"..": "enabled"}} {
		if err := tx.RecordUnitStates(states); err == nil {
			t.Errorf("RecordUnitStates(%v) succeeded", states)
		}
	}
}
