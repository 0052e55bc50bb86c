package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Leftovers 1: the daemon is killed in the middle of writing 400 files
// (some over files the node had), and the node's desired config changes
// while it is down. Restarted, it rolls back what the abandoned update
// wrote (the originals back, its new files, temporary files and journal
// gone) before anything else, says so, gives back its cordon, then applies
// the new config.
func TestKilledMidWriteThenNewConfig(t *testing.T) {
	t.Parallel()
	killedMidWrite(t, "lo1", false)
}

// Leftovers 1b: the same, when the desired config goes back to the one the
// node ran: the node ends exactly as it was.
func TestKilledMidWriteThenConfigBack(t *testing.T) {
	t.Parallel()
	killedMidWrite(t, "lo1b", true)
}

func killedMidWrite(t *testing.T, name string, back bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const dir = "/etc/nodeconfd-left"
	cfgA, cfgB, cfgC := "rendered-"+name+"-a", "rendered-"+name+"-b", "rendered-"+name+"-c"
	config(t, cfgA, ign(nil))
	// The folder needs no post action, so only the update that writes
	// /etc/nodeconfd-lz.conf too reboots (and drains).
	n, log := nodeWithPolicy(t, name, cfgA, "nodeDisruptionPolicy:\n  files:\n  - path: "+dir+"/\n    actions: [{type: None}]\n")
	originals := map[string]string{}
	for i := 100; i < 120; i++ {
		p := fmt.Sprintf("%s/f%03d.conf", dir, i)
		originals[p] = fmt.Sprintf("original %d\n", i)
		putNodeFile(t, n, p, originals[p])
	}
	files := map[string]string{}
	for i := 0; i < 400; i++ {
		files[fmt.Sprintf("%s/f%03d.conf", dir, i)] = strings.Repeat(fmt.Sprintf("line %d\n", i), 250)
	}
	files["/etc/nodeconfd-lz.conf"] = "b\n"
	config(t, cfgB, ign(files)) // a reboot update: cordon, drain, write
	crio := "/etc/containers/registries.d/" + name + ".yaml"
	config(t, cfgC, ign(map[string]string{crio: "docker: {}\n", dir + "/f101.conf": "from c\n"}))
	next := cfgC
	if back {
		next = cfgA
	}
	if err := n.SetDesired(ctx, cfgB); err != nil {
		t.Fatal(err)
	}
	killOnceWritten(ctx, t, n, filepath.Join(dir, "f000.conf"))
	if _, err := os.Stat(filepath.Join(n.Sys.Root, "/etc/nodeconfd-lz.conf")); !os.IsNotExist(err) {
		t.Fatalf("the write was not cut short: the last file is there (%v)", err)
	}
	journal := filepath.Join(n.Sys.Root, "/var/lib/nodeconfd/txn", cfgB)
	if _, err := os.Stat(filepath.Join(journal, "journal")); err != nil {
		t.Fatalf("no journal after the kill (the write was not cut short?): %v", err)
	}
	rec := readRecord(t, n)
	if !rec.Write.Started || rec.Done("write") || !rec.Cordon.ByUs {
		t.Fatalf("record after the kill: write started %v, steps %v, cordoned %v", rec.Write.Started, rec.Steps, rec.Cordon.ByUs)
	}
	entries, _ := os.ReadDir(filepath.Join(n.Sys.Root, dir))
	t.Logf("killed with %d entries in %s", len(entries), dir)

	if err := n.SetDesired(ctx, next); err != nil {
		t.Fatal(err)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, next); err != nil {
		t.Fatal(err)
	}
	wantRolledBack(ctx, t, n, log, rolledBackCase{dir: dir, crio: crio, abandoned: cfgB, back: back, originals: originals})
}

type rolledBackCase struct {
	dir, crio, abandoned string
	back                 bool
	originals            map[string]string
}

// wantRolledBack checks the node after killedMidWrite: the abandoned
// update's writes rolled back, the new config applied, the status true.
func wantRolledBack(ctx context.Context, t *testing.T, n *testbed.Node, log *testbed.StatusLog, c rolledBackCase) {
	t.Helper()
	dir, crio, back, originals := c.dir, c.crio, c.back, c.originals
	journal := filepath.Join(n.Sys.Root, "/var/lib/nodeconfd/txn", c.abandoned)
	// Only the originals (and the new config's file) are left, whole.
	entries, err := os.ReadDir(filepath.Join(n.Sys.Root, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(originals) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%d entries in %s, want the %d originals: %v", len(entries), dir, len(originals), names)
	}
	for p, want := range originals {
		if p == dir+"/f101.conf" && !back {
			want = "from c\n"
		}
		if got := readNodeFile(t, n, p); got != want {
			t.Errorf("%s = %.40q, want %q", p, got, want)
		}
	}
	if !back {
		if got := readNodeFile(t, n, crio); got != "docker: {}\n" {
			t.Errorf("%s = %q", crio, got)
		}
	} else if _, err := os.Stat(filepath.Join(n.Sys.Root, crio)); !os.IsNotExist(err) {
		t.Errorf("%s: %v", crio, err)
	}
	if back {
		filepath.WalkDir(filepath.Join(n.Sys.Root, "/var/lib/nodeconfd/orig", dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				t.Errorf("backup of a rolled-back original left: %s", p)
			}
			return nil
		})
	}
	if _, err := os.Stat(filepath.Join(n.Sys.Root, "/etc/nodeconfd-lz.conf")); !os.IsNotExist(err) {
		t.Errorf("the abandoned update's /etc/nodeconfd-lz.conf: %v", err)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("the abandoned update's journal is still there: %v", err)
	}
	wantNoTempFiles(t, n)
	if getNode(t, n.Name).Spec.Unschedulable {
		t.Error("node left cordoned")
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
	said := false
	for _, cond := range log.History("AppliedFilesAndOS") {
		said = said || cond.Status == "False" && cond.Reason == "RolledBack" &&
			strings.Contains(cond.Message, "Rolled back the write of "+c.abandoned)
	}
	if !said {
		t.Errorf("AppliedFilesAndOS never said the write was rolled back: %+v", log.History("AppliedFilesAndOS"))
	}
	wantGivenBack(ctx, t, n, log, "what it had written was rolled back")
	for _, cond := range []string{"Updated", "UpdateComplete"} {
		if got := log.Condition(cond); got == nil || got.Status != "True" {
			t.Errorf("%s = %+v, want True", cond, got)
		}
	}
	if got := log.Condition("NodeDegraded"); got == nil || got.Status != "False" {
		t.Errorf("NodeDegraded = %+v", got)
	}
}

// Leftovers 2: an update that enables one unit, disables another and masks
// a third, then fails later in its write (its OS image cannot be pulled):
// every unit is back as it was, as the node's systemd reports it.
func TestFailedWriteRestoresUnitEnablement(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const unitText = "[Unit]\nDescription=nodeconfd test\n[Service]\nType=oneshot\nExecStart=/bin/true\n" +
		"[Install]\nWantedBy=multi-user.target\n"
	osConfig(t, "rendered-lo2-a", ign(nil), osImageA)
	n, log := osNode(t, "lo2", "rendered-lo2-a", rpmOstree(osImageA))
	for _, u := range []string{"lo2-off.service", "lo2-mask.service"} {
		putNodeFile(t, n, "/usr/lib/systemd/system/"+u, unitText)
	}
	if _, err := n.Sys.Exec(ctx, "systemctl", "enable", "lo2-off.service"); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{"lo2-on.service": "not-found", "lo2-off.service": "enabled", "lo2-mask.service": "disabled"}
	for u, want := range before {
		if got := isEnabled(ctx, t, n, u); got != want {
			t.Fatalf("set-up: %s is %s, want %s", u, got, want)
		}
	}
	units := `"systemd":{"units":[{"name":"lo2-on.service","enabled":true,"contents":` + jsonString(unitText) + `},` +
		`{"name":"lo2-off.service","enabled":false},{"name":"lo2-mask.service","mask":true}]}`
	osConfig(t, "rendered-lo2-b", ign(map[string]string{"/etc/lo2.conf": "lo2\n"}, units), osImageB)
	if err := n.FailOSPulls(1000); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-lo2-b"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	// A retry may be running: SIGTERM lets its step end (and roll back).
	if err := n.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	// The daemon's last status write may reach the test's watch after
	// the daemon has exited.
	if c := waitLatest(ctx, log, "AppliedFilesAndOS", "(rolled back this update's writes)"); c != nil {
		t.Errorf("AppliedFilesAndOS = %s %q", c.Status, c.Message)
	}
	for u, want := range before {
		if got := isEnabled(ctx, t, n, u); got != want {
			t.Errorf("%s is %s after the failed update, want %s as before", u, got, want)
		}
	}
	for _, p := range []string{"/etc/lo2.conf", "/etc/systemd/system/lo2-on.service", "/etc/systemd/system/lo2-mask.service",
		"/etc/systemd/system/multi-user.target.wants/lo2-on.service"} {
		if _, err := os.Lstat(filepath.Join(n.Sys.Root, p)); !os.IsNotExist(err) {
			t.Errorf("%s left by the failed update: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(n.Sys.Root, "/etc/systemd/system/multi-user.target.wants/lo2-off.service")); err != nil {
		t.Errorf("the link of the unit enabled before is gone: %v", err)
	}
	if ids, _ := os.ReadDir(filepath.Join(n.Sys.Root, "/var/lib/nodeconfd/txn")); len(ids) != 0 {
		t.Errorf("journals left: %v", ids)
	}
	// Once pulls work the update goes through and validates its units.
	if err := n.FailOSPulls(0); err != nil {
		t.Fatal(err)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-lo2-b"); err != nil {
		t.Fatal(err)
	}
	after := map[string]string{"lo2-on.service": "enabled", "lo2-off.service": "disabled", "lo2-mask.service": "masked"}
	for u, want := range after {
		if got := isEnabled(ctx, t, n, u); got != want {
			t.Errorf("%s is %s after the update, want %s", u, got, want)
		}
	}
	// A unit the config enables that an administrator disables is drift.
	if _, err := n.Sys.Exec(ctx, "systemctl", "disable", "lo2-on.service"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	if msg := log.Condition("NodeDegraded").Message; !strings.Contains(msg, "unit lo2-on.service: is disabled, config wants enabled") {
		t.Errorf("NodeDegraded = %q, want the drift of lo2-on.service", msg)
	}
}

// isEnabled is `systemctl is-enabled` in the node ("not-found" for no unit).
func isEnabled(ctx context.Context, t *testing.T, n *testbed.Node, unit string) string {
	t.Helper()
	out, err := n.Sys.Exec(ctx, "systemctl", "is-enabled", unit)
	state := strings.TrimSpace(string(out))
	if err != nil && state == "" && strings.Contains(err.Error(), "No such file") {
		return "not-found"
	}
	if state == "" {
		t.Fatalf("is-enabled %s: %v", unit, err)
	}
	return state
}

func putNodeFile(t *testing.T, n *testbed.Node, path, data string) {
	t.Helper()
	p := filepath.Join(n.Sys.Root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readRecord(t *testing.T, n *testbed.Node) *progress.Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.Sys.Root, "/var/lib/nodeconfd", progress.FileName))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := progress.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// wantNoTempFiles checks that no temporary file of the daemon is left in
// the node's /etc or state folder.
func wantNoTempFiles(t *testing.T, n *testbed.Node) {
	t.Helper()
	for _, top := range []string{"/etc", "/var/lib/nodeconfd"} {
		filepath.WalkDir(filepath.Join(n.Sys.Root, top), func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), "nodeconfd-tmp") {
				t.Errorf("temporary file left: %s", p)
			}
			return nil
		})
	}
}

// Leftovers 3: a journal that belongs to no update (its progress record is
// gone) is rolled back when the daemon starts, before it idles, and the
// daemon says so in an Event.
func TestOrphanJournalRolledBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name, dir = "lo3", "/etc/nodeconfd-orphan"
	config(t, "rendered-lo3-a", ign(nil))
	n, log := nodeWithPolicy(t, name, "rendered-lo3-a", "nodeDisruptionPolicy:\n  files:\n  - path: "+dir+"/\n    actions: [{type: None}]\n")
	putNodeFile(t, n, dir+"/f010.conf", "original\n")
	files := map[string]string{}
	for i := 0; i < 400; i++ {
		files[fmt.Sprintf("%s/f%03d.conf", dir, i)] = strings.Repeat(fmt.Sprintf("line %d\n", i), 250)
	}
	config(t, "rendered-lo3-b", ign(files))
	if err := n.SetDesired(ctx, "rendered-lo3-b"); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(n.Sys.Root, dir, "f000.conf")); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no file of the update written")
		}
		time.Sleep(time.Millisecond)
	}
	if err := n.KillDaemon(); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(n.Sys.Root, "/var/lib/nodeconfd/txn/rendered-lo3-b")
	if _, err := os.Stat(filepath.Join(journal, "journal")); err != nil {
		t.Fatalf("no journal after the kill (the write was not cut short?): %v", err)
	}
	if err := os.Remove(filepath.Join(n.Sys.Root, "/var/lib/nodeconfd", progress.FileName)); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-lo3-a"); err != nil {
		t.Fatal(err)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for _, err := os.Stat(journal); !os.IsNotExist(err); _, err = os.Stat(journal) {
		if time.Now().After(deadline) {
			t.Fatalf("the orphan journal is still there: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	wantEvents(t, name, "Node", "LeftoverJournal")
	entries, err := os.ReadDir(filepath.Join(n.Sys.Root, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || readNodeFile(t, n, dir+"/f010.conf") != "original\n" {
		t.Errorf("%d entries left in %s, want only the original f010.conf as it was", len(entries), dir)
	}
	wantNoTempFiles(t, n)
	// The daemon writes Updated=True after the rollback, once it idles:
	// the journal can be gone a moment before.
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := log.WaitFor(wctx, "Updated", "True", ""); err != nil {
		t.Errorf("Updated = %+v: %v", log.Condition("Updated"), err)
	}
	if !strings.Contains(n.DaemonLog(), "Rolled back the unfinished write of rendered-lo3-b") {
		t.Error("the daemon log does not say it rolled back the orphan journal")
	}
}

// waitLatest waits up to 30 s for the latest condition cond to have a
// message containing text; it returns nil then, else the condition last
// seen.
func waitLatest(ctx context.Context, log *testbed.StatusLog, cond, text string) *metav1.Condition {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		c := log.Condition(cond)
		if c != nil && strings.Contains(c.Message, text) {
			return nil
		}
		select {
		case <-ctx.Done():
			if c == nil {
				c = &metav1.Condition{Type: cond}
			}
			return c
		case <-time.After(100 * time.Millisecond):
		}
	}
}
