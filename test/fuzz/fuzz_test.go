package fuzz

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// baseIgnition is the config the node runs before the fuzzed one, when the
// input asks for one: files, a unit with a drop-in and SSH keys, so that
// the fuzzed config also removes and replaces things.
const baseIgnition = `{"ignition":{"version":"3.4.0"},
"storage":{"files":[
 {"path":"/etc/base/a.conf","mode":420,"contents":{"source":"data:,base%20a"}},
 {"path":"/etc/base/b.conf","mode":384,"user":{"name":"core"},"contents":{"source":"data:,base%20b"}},
 {"path":"/etc/hostname","contents":{"source":"data:,base-host"}}]},
"systemd":{"units":[{"name":"base.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n",
 "dropins":[{"name":"10-base.conf","contents":"[Service]\nNice=1\n"}]}]},
"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAAbase base"]}]}}`

// FuzzApply runs a fuzzed rendered MachineConfig (its Ignition bytes,
// kernel arguments one per line, OS image URL) through the daemon's own
// prepare, write and validate phases into a fresh temporary node, from no
// config or from a base config. Every input must be refused in prepare
// with nothing on the node changed, or written completely (passing the
// validate phase's on-disk check) with nothing else changed: no temporary
// file, no open journal, nothing outside the node's root. A write step
// that fails (even when rolled back) is a finding: whatever made it fail
// was knowable in prepare.
func FuzzApply(f *testing.F) {
	for _, s := range seeds() {
		f.Add([]byte(s.ignition), s.kargs, s.osImage, s.withBase)
	}
	f.Fuzz(func(t *testing.T, ignition []byte, kargs, osImage string, withBase bool) {
		checkUpdate(t, ignition, kargs, osImage, withBase)
	})
}

// checkUpdate runs one input of the fuzz targets (see FuzzApply) and
// reports whether the update was written.
func checkUpdate(t *testing.T, ignition []byte, kargs, osImage string, withBase bool) (written bool) {
	dir, host := newNode(t)
	units := &systemdtest.Fake{} // the node's systemd, for both updates
	current := ""
	if withBase {
		current = "rendered-base"
		if err := runUpdate(host, units, "", current, mc(current, []byte(baseIgnition), "", "")); err != nil {
			t.Fatalf("applying the base config: %v", err)
		}
	}
	desired := mc("rendered-fuzz", ignition, kargs, osImage)
	before := snapshot(t, dir)
	err := runUpdate(host, units, current, desired.Name, desired)
	after := snapshot(t, dir)
	var se *phases.StepError
	switch {
	case err == nil:
		written = true
		checkWritten(t, host, dir, before, after, desired)
	case errors.As(err, &se) && se.Phase == "prepare":
		if ch := changed(before, after, inState); len(ch) > 0 {
			t.Errorf("refused in prepare (%v), yet changed %q", short(err.Error()), ch)
		}
	case errors.As(err, &se) && se.Phase == "write":
		t.Errorf("accepted in prepare, then the write failed (knowable in prepare?): %v", short(err.Error()))
		if ch := changed(before, after, inState); len(ch) > 0 {
			t.Errorf("the failed write left %q changed after its rollback", ch)
		}
	default:
		t.Errorf("written, then: %v", short(err.Error()))
	}
	if tmp := tempFiles(after); len(tmp) > 0 {
		t.Errorf("temporary files left: %q", tmp)
	}
	if ch := changed(before, after, func(rel string) bool { return strings.HasPrefix(rel, "node/") }); len(ch) > 0 {
		t.Errorf("changed outside the node's root: %q", ch)
	}
	return written
}

// checkWritten checks a successful update: no open journal, and nothing
// changed on the node but the paths the update manages.
func checkWritten(t *testing.T, host *hostfs.FS, dir string, before, after map[string]entry, desired *mcfgv1.MachineConfig) {
	t.Helper()
	if txns, err := host.PendingTxns(); err != nil || len(txns) > 0 {
		t.Errorf("open journals after a committed update: %q (%v)", txns, err)
	}
	cfg, err := plan.Parse(desired)
	if err != nil {
		t.Fatalf("parsed in prepare, not now: %v", err)
	}
	managed := map[string]bool{}
	for p := range cfg.Files {
		managed["node"+p] = true
	}
	if ch := changed(before, after, func(rel string) bool {
		return inState(rel) || managed[rel] || strings.HasPrefix(rel, "node/etc/base/") ||
			strings.HasPrefix(rel, "node/etc/systemd/system/") || rel == "node/home/core/.ssh/authorized_keys" ||
			rel == "node/etc/hostname"
	}); len(ch) > 0 {
		t.Errorf("the update changed paths its config does not manage: %q", ch)
	}
}

// inState reports whether rel (relative to the temp dir) is in the
// daemon's state folder.
func inState(rel string) bool {
	return rel == "node/var/lib/nodeconfd" || strings.HasPrefix(rel, "node/var/lib/nodeconfd/")
}

// runUpdate runs the daemon's prepare, write and validate phases for the
// update from current to desired (the configs are mcs), as the daemon
// would on a node without an OS updater, with systemd faked (units, which
// a rollback also restores the units' enablement through).
func runUpdate(host *hostfs.FS, units *systemdtest.Fake, current, desired string, mcs ...*mcfgv1.MachineConfig) error {
	configs := configSource{}
	for _, m := range mcs {
		configs[m.Name] = m
	}
	if current != "" {
		configs[current] = mc(current, []byte(baseIgnition), "", "")
	}
	r := &phases.Runner{
		Env: phases.Env{Ports: phases.Ports{Configs: configs, Host: daemon.Host{FS: host, Units: units}, Units: units,
			Policy: plan.DefaultPolicy()}},
		Status: status.NewStager(nopStatus{}, time.Now, status.Snapshot{}), Log: zap.NewNop(), Now: time.Now, Node: "fuzz",
		Phases: []phases.Item{phases.Prepare(), phases.Write(), phases.Validate()},
		Record: progress.New(current, desired),
	}
	return r.Run(context.Background())
}

func mc(name string, ignition []byte, kargs, osImage string) *mcfgv1.MachineConfig {
	m := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: ignition}, OSImageURL: osImage}}
	if kargs != "" {
		m.Spec.KernelArguments = strings.Split(kargs, "\n")
	}
	return m
}

// configSource serves MachineConfigs by name.
type configSource map[string]*mcfgv1.MachineConfig

func (c configSource) MachineConfig(_ context.Context, name string) (*mcfgv1.MachineConfig, error) {
	if m, ok := c[name]; ok {
		return m, nil
	}
	return nil, errors.New("no MachineConfig " + name)
}

type nopStatus struct{}

func (nopStatus) WriteStatus(context.Context, status.Snapshot) error { return nil }
