package phases_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Fakes for the runner's unit tests; the real parts are tested in test/e2e.

type configs map[string]string

func (c configs) MachineConfig(_ context.Context, name string) (*mcfgv1.MachineConfig, error) {
	ign, ok := c[name]
	if !ok {
		return nil, errors.New("not found")
	}
	mc := &mcfgv1.MachineConfig{}
	mc.Name = name
	mc.Spec.Config = runtime.RawExtension{Raw: []byte(ign)}
	return mc, nil
}

type cluster struct {
	calls []string
	// drainErr, when set, is what Drain returns.
	drainErr error
	// drainBlocks makes Drain wait until its context ends.
	drainBlocks bool
	// onDrain, when set, is called as Drain starts.
	onDrain func()
	// checkErr, when set, is what CheckDrain returns.
	checkErr error
	checks   int
	// onCordon, when set, runs when Cordon is called, before it cordons;
	// cordonErr is then what Cordon returns.
	onCordon  func()
	cordonErr error
	// steers are the steering taint's changes, "on" or "off".
	steers []string
	// states are the state annotations written without a currentConfig.
	states []string
}

func (c *cluster) Cordon(context.Context) (bool, error) {
	if c.onCordon != nil {
		c.onCordon()
	}
	if c.cordonErr != nil {
		return false, c.cordonErr
	}
	c.calls = append(c.calls, "cordon")
	return true, nil
}
func (c *cluster) CheckDrain(context.Context) error { c.checks++; return c.checkErr }
func (c *cluster) Steer(_ context.Context, on bool) error {
	c.steers = append(c.steers, map[bool]string{true: "on", false: "off"}[on])
	return nil
}
func (c *cluster) Uncordon(context.Context) error { c.calls = append(c.calls, "uncordon"); return nil }
func (c *cluster) Drain(ctx context.Context, p phases.DrainProgress) (phases.DrainResult, error) {
	c.calls = append(c.calls, "drain")
	if c.onDrain != nil {
		c.onDrain()
	}
	if c.drainBlocks {
		<-ctx.Done()
		return phases.DrainResult{}, ctx.Err()
	}
	if c.drainErr != nil {
		p.Blocked("Evicted 0/1 pods; waiting on pod default/web-0")
		return phases.DrainResult{}, c.drainErr
	}
	p.Progress("Evicted 1/1 pods")
	return phases.DrainResult{Evicted: 1}, nil
}
func (c *cluster) SetNodeState(_ context.Context, cur, state, _ string) error {
	if cur == "" { // the state annotation alone (Working, Degraded): not an action on the node
		c.states = append(c.states, state)
		return nil
	}
	c.calls = append(c.calls, "state "+cur+" "+state)
	return nil
}

// host is an in-memory node filesystem.
type host struct {
	files   map[string]string
	state   map[string][]byte
	saves   int // writes of the progress record
	failOn  string
	rolled  bool
	written []string
	// pending are the open journals; unitStates the journaled enablement,
	// and callsAtRecord the systemd calls made when it was journaled.
	pending       []string
	unitStates    map[string]string
	sd            *systemdtest.Fake
	callsAtRecord []string
	// preflightErr is what Preflight returns; preflights counts its calls.
	preflightErr error
	preflights   int
	// recordAtCommit is the saved progress record when a journal commits.
	recordAtCommit []byte
}

type txn struct {
	h  *host
	id string
}

func (t txn) WriteFiles(fs []plan.File) error {
	for _, f := range fs {
		if f.Path == t.h.failOn {
			return errors.New("disk full")
		}
		t.h.files[f.Path] = string(f.Contents)
		t.h.written = append(t.h.written, f.Path)
	}
	return nil
}
func (t txn) RemoveFile(p string) error { delete(t.h.files, p); return nil }
func (t txn) WriteUnit(u plan.Unit) error {
	if u.Contents != nil {
		t.h.files["unit:"+u.Name] = *u.Contents
	}
	return nil
}
func (t txn) RemoveUnit(u plan.Unit) error { delete(t.h.files, "unit:"+u.Name); return nil }
func (t txn) WriteSSHKeys(user string, keys []string) error {
	t.h.files["ssh:"+user] = strings.Join(keys, "\n")
	return nil
}
func (t txn) SetPasswordHash(hash string) error {
	t.h.files["shadow:core"] = hash
	return nil
}
func (t txn) RecordUnitStates(states map[string]string) error {
	if t.h.unitStates == nil {
		t.h.unitStates = map[string]string{}
	}
	for n, s := range states {
		if _, ok := t.h.unitStates[n]; !ok {
			t.h.unitStates[n] = s
		}
	}
	if t.h.sd != nil {
		t.h.callsAtRecord = t.h.sd.CallLog()
	}
	return nil
}
func (t txn) Journaled() (int, []string) {
	return len(t.h.written), slices.Sorted(maps.Keys(t.h.unitStates))
}
func (t txn) CreatedDirs() []string                 { return nil }
func (t txn) RemoveEmptyDirs([]string) (int, error) { return 0, nil }
func (t txn) Rollback() error {
	t.h.rolled = true
	t.h.files = map[string]string{}
	t.h.done(t.id)
	return nil
}
func (t txn) Commit() error {
	t.h.recordAtCommit = t.h.state[progress.FileName]
	t.h.done(t.id)
	return nil
}
func (h *host) done(id string) {
	h.pending = slices.DeleteFunc(h.pending, func(p string) bool { return p == id })
}
func (h *host) BeginTxn(id string) (phases.Txn, error) {
	if !slices.Contains(h.pending, id) {
		h.pending = append(h.pending, id)
	}
	return txn{h, id}, nil
}
func (h *host) PendingTxns() ([]string, error) { return slices.Sorted(slices.Values(h.pending)), nil }
func (h *host) CheckFile(f plan.File) error {
	if h.files[f.Path] != string(f.Contents) {
		return errors.New(f.Path + ": contents differ")
	}
	return nil
}
func (h *host) CheckUnit(plan.Unit) error           { return nil }
func (h *host) CheckSSHKeys(string, []string) error { return nil }
func (h *host) Preflight(_, _ plan.Config, _ plan.Diff) error {
	h.preflights++
	return h.preflightErr
}
func (h *host) WriteState(n string, d []byte) error {
	h.state[n] = d
	if n == progress.FileName {
		h.saves++
	}
	return nil
}
func (h *host) ReadState(n string) ([]byte, error) {
	if d, ok := h.state[n]; ok {
		return d, nil
	}
	return nil, fs.ErrNotExist
}

type writes struct {
	n    int
	last []metav1.Condition
}

func (w *writes) WriteStatus(_ context.Context, s status.Snapshot) error {
	w.n++
	w.last = append([]metav1.Condition(nil), s.Conditions...)
	return nil
}

// stager is the status of a runner that writes to w, starting from conds.
func stager(w *writes, conds []metav1.Condition) *status.Stager {
	return status.NewStager(w, time.Now, status.Snapshot{Conditions: conds})
}

// stopOn is a stop signal that stops with ErrStopped once shutdown is done
// and with ErrSuperseded once changed is closed (nil: never).
func stopOn(t *testing.T, shutdown context.Context, changed <-chan struct{}) phases.Signals {
	t.Helper()
	superseded := func() bool {
		select {
		case <-changed:
			return changed != nil
		default:
			return false
		}
	}
	return phases.Signals{Shutdown: shutdown, Superseded: superseded}
}

const empty = `{"ignition":{"version":"3.4.0"}}`

func file(path, contents string) string {
	return `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"` + path + `","contents":{"source":"data:,` + contents + `"}}]}}`
}

func newRunner(cfgs configs, h *host, cl *cluster, units *systemdtest.Fake, w *writes) *phases.Runner {
	r := &phases.Runner{
		Env:    phases.Env{Ports: phases.Ports{Configs: cfgs, Cluster: cl, Host: h, Units: units, Policy: plan.DefaultPolicy()}},
		Status: stager(w, status.Initial(metav1.Now())), Node: "n1", Log: zap.NewNop(), Now: time.Now, Phases: phases.All(),
		Record: progress.New("a", "b"),
	}
	return r
}

func TestRunnerPostActions(t *testing.T) {
	for _, tc := range []struct {
		name, desired string
		wantCalls     []string // systemd calls
		wantCluster   []string
		wantReason    string // UpdatePostActionComplete's reason
		err           error
	}{
		{"crio", file("/etc/containers/registries.d/a.yaml", "x"), []string{"is-enabled crio.service", "boot-id", "reload crio.service"},
			[]string{"state b Done"}, "UpdatePostActionComplete", nil},
		{"none", file("/var/lib/kubelet/config.json", "x"), nil, []string{"state b Done"}, "None", nil},
		{"reboot", file("/etc/motd", "x"), []string{"boot-id", "boot-id", "reboot"}, []string{"cordon", "drain"}, "", phases.ErrRebooting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			r := newRunner(configs{"a": empty, "b": tc.desired}, h, cl, units, w)
			err := r.Run(context.Background())
			if !errors.Is(err, tc.err) {
				t.Fatalf("Run: %v, want %v", err, tc.err)
			}
			if strings.Join(units.CallLog(), ",") != strings.Join(tc.wantCalls, ",") {
				t.Errorf("systemd calls %v, want %v", units.CallLog(), tc.wantCalls)
			}
			if strings.Join(cl.calls, ",") != strings.Join(tc.wantCluster, ",") {
				t.Errorf("cluster calls %v, want %v", cl.calls, tc.wantCluster)
			}
			if tc.err != nil {
				return
			}
			if c := status.Find(w.last, status.UpdatePostActionComplete); c.Reason != tc.wantReason {
				t.Errorf("UpdatePostActionComplete reason %q, want %q", c.Reason, tc.wantReason)
			}
			if c := status.Find(w.last, status.Updated); c.Status != metav1.ConditionTrue {
				t.Errorf("Updated = %s", c.Status)
			}
			// The contract's least: each condition that goes Unknown, then
			// True, needs a write of its own (start, prepared, written,
			// post action, done).
			if w.n > 5 {
				t.Errorf("%d status writes for a rebootless update, want at most 5", w.n)
			}
		})
	}
}

// A failed write rolls back and reports: the condition Unknown with Error:,
// NodeDegraded True.
func TestRunnerWriteFailureRollsBack(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}, failOn: "/etc/b"}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	two := `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,1"}},{"path":"/etc/b","contents":{"source":"data:,2"}}]}}`
	r := newRunner(configs{"a": empty, "b": two}, h, cl, units, w)
	err := r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("Run: %v, want a rolled-back write error", err)
	}
	r.Fail(context.Background(), err)
	if !h.rolled || len(h.files) != 0 {
		t.Errorf("not rolled back: %v", h.files)
	}
	c := status.Find(w.last, status.AppliedFilesAndOS)
	if c.Status != metav1.ConditionUnknown || !strings.HasPrefix(c.Message, "Error: ") {
		t.Errorf("AppliedFilesAndOS = %s %q", c.Status, c.Message)
	}
	if d := status.Find(w.last, status.NodeDegraded); d.Status != metav1.ConditionTrue {
		t.Errorf("NodeDegraded = %s", d.Status)
	}
}

// After a reboot the runner resumes at the reboot step and checks the boot ID.
func TestRunnerResumesAfterReboot(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	cfgs := configs{"a": empty, "b": file("/etc/motd", "x")}
	r := newRunner(cfgs, h, cl, units, w)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	// A new daemon after the boot: same record, same host.
	r2 := &phases.Runner{Env: r.Env, Status: stager(w, w.last), Node: "n1", Log: zap.NewNop(), Now: time.Now, Phases: phases.All(), Record: rec}
	if err := r2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := status.Find(w.last, status.RebootedNode); c.Status != metav1.ConditionTrue ||
		!strings.Contains(c.Message, "boot ID changed") {
		t.Errorf("RebootedNode = %s %q", c.Status, c.Message)
	}
	if n := strings.Count(strings.Join(units.CallLog(), ","), "reboot"); n != 1 {
		t.Errorf("%d reboots, want 1", n)
	}
}

// A drain that gives up at its timeout uncordons the node it cordoned,
// writes nothing, and leaves a record whose retry cordons again.
func TestRunnerDrainTimeoutUncordons(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl := &cluster{drainErr: fmt.Errorf("%w after 1m0s; waiting on pod default/web-0", phases.ErrDrainTimedOut)}
	units, w := &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	err := r.Run(context.Background())
	if !errors.Is(err, phases.ErrDrainTimedOut) || !strings.Contains(err.Error(), "uncordoned the node") {
		t.Fatalf("Run: %v, want a drain timeout that uncordoned", err)
	}
	if got := strings.Join(cl.calls, ","); got != "cordon,drain,uncordon" {
		t.Errorf("calls %s, want cordon,drain,uncordon", got)
	}
	r.Fail(context.Background(), err)
	cl.calls = nil
	if len(h.written) != 0 || len(units.CallLog()) != 0 {
		t.Errorf("wrote %v, systemd calls %v after a failed drain", h.written, units.CallLog())
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	if rec.Done("cordon") || rec.Done("drain") || rec.Cordon.ByUs || !rec.Done("prepare") {
		t.Errorf("record after the failed drain: %+v", rec)
	}
	if c := status.Find(w.last, status.Cordoned); c.Status != metav1.ConditionFalse {
		t.Errorf("Cordoned = %s %q, want False", c.Status, c.Message)
	}
	if c := status.Find(w.last, status.NodeDegraded); c.Status != metav1.ConditionTrue ||
		!strings.Contains(c.Message, "waiting on pod default/web-0") {
		t.Errorf("NodeDegraded = %s %q", c.Status, c.Message)
	}
	// The retry: the same record runs the cordon again.
	cl.drainErr = nil
	r2 := &phases.Runner{Env: r.Env, Status: stager(w, w.last), Node: "n1", Log: zap.NewNop(), Now: time.Now, Phases: phases.All(), Record: rec}
	if err := r2.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("retry: %v", err)
	}
	if got := strings.Join(cl.calls, ","); got != "cordon,drain" {
		t.Errorf("calls %s after the retry", got)
	}
}

// A drain blocked without end gives up when the runner is interrupted (the
// daemon is shutting down): the drain is not done and nothing is written.
func TestRunnerInterruptStopsDrain(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{drainBlocks: true}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	shutdown, interrupt := context.WithCancel(context.Background())
	r.Stop = stopOn(t, shutdown, nil)
	time.AfterFunc(50*time.Millisecond, interrupt)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrStopped) {
		t.Fatalf("Run: %v, want ErrStopped", err)
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Done("cordon") || rec.Done("drain") || len(h.written) != 0 {
		t.Errorf("after the interrupt: steps %+v, written %v", rec.Steps, h.written)
	}
}

// A new desired config stops a drain blocked without end: the cordon is
// undone before the new config takes over, nothing
// is written, and the status shows no failure.
func TestRunnerDesiredChangeStopsDrain(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	changed := make(chan struct{})
	cl, units, w := &cluster{drainBlocks: true, onDrain: func() { close(changed) }}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	r.Stop = stopOn(t, context.Background(), changed)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrSuperseded) {
		t.Fatalf("Run: %v, want ErrSuperseded", err)
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	if rec.Done("cordon") || rec.Cordon.ByUs || rec.Done("drain") || len(h.written) != 0 {
		t.Errorf("after the change: steps %+v, cordoned by us %v, written %v", rec.Steps, rec.Cordon.ByUs, h.written)
	}
	if got := strings.Join(cl.calls, ","); got != "cordon,drain,uncordon" {
		t.Errorf("cluster calls %s", got)
	}
	if c := status.Find(w.last, status.Cordoned); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "desired config changed") {
		t.Errorf("Cordoned = %s %q", c.Status, c.Message)
	}
	if c := status.Find(w.last, status.NodeDegraded); c.Status != metav1.ConditionFalse {
		t.Errorf("NodeDegraded = %s after a superseded drain", c.Status)
	}
}

// A new desired config does not stop a step once the update may have
// written something: the write goes on.
func TestRunnerDesiredChangeLeavesWrite(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	changed := make(chan struct{})
	close(changed)
	r.Stop = stopOn(t, context.Background(), changed)
	// The cordon and the drain are done (a resumed update).
	r.Record.Cordon.ByUs = true
	r.Record.MarkDone(progress.Step{Name: "cordon"})
	r.Record.MarkDone(progress.Step{Name: "drain"})
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v, want the update to go on to its reboot", err)
	}
	if h.files["/etc/motd"] != "x" {
		t.Errorf("file not written: %v", h.files)
	}
}

// A new desired config ends a hold (a closed window) before anything is
// done.
func TestRunnerDesiredChangeStopsHold(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	changed := make(chan struct{})
	r.Stop = stopOn(t, context.Background(), changed)
	r.Env.Waits = holding(func() { close(changed) })
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrSuperseded) {
		t.Fatalf("Run: %v, want ErrSuperseded", err)
	}
	if len(cl.calls) != 0 {
		t.Errorf("cluster calls %v after a change while waiting", cl.calls)
	}
	if rec, _ := progress.Unmarshal(h.state[progress.FileName]); rec.Done("cordon") {
		t.Error("cordon recorded done")
	}
}

// The give-back step, for an update replaced before it wrote anything and
// that did not stop itself (a restart came between): its cordon is lifted
// and the record says so.
func TestRunnerGiveBack(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	old := progress.New("a", "b")
	old.Cordon.ByUs, old.Cordon.Own = true, true
	old.MarkDone(progress.Step{Name: "detect"})
	old.MarkDone(progress.Step{Name: "cordon"})
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x"), "c": empty}, h, cl, units, w)
	r.Record = progress.Replacing(old, "a", "c")
	r.Phases = []phases.Item{phases.GiveBack()}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	if st := rec.Step("give-back"); st == nil || !strings.HasSuffix(st.Message, "uncordoned the node, nothing was written") {
		t.Errorf("give-back step %+v", st)
	}
	if rec.Done("cordon") || rec.Cordon.ByUs {
		t.Errorf("record after the give-back: steps %+v, cordoned by us %v", rec.Steps, rec.Cordon.ByUs)
	}
	if got := strings.Join(cl.calls, ","); got != "uncordon" {
		t.Errorf("cluster calls %s", got)
	}
}

// A cordon inherited from a replaced update that had written its files
// stays until the new update's uncordon, even when the new config needs no
// drain: Cordoned says True meanwhile, also when the new update fails.
func TestRunnerInheritedCordonReported(t *testing.T) {
	for _, fail := range []bool{false, true} {
		h := &host{files: map[string]string{}, state: map[string][]byte{}}
		if fail {
			h.failOn = "/etc/containers/registries.d/a.yaml"
		}
		cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
		r := newRunner(configs{"a": empty, "b": file("/etc/containers/registries.d/a.yaml", "x")}, h, cl, units, w)
		r.Record.Cordon.ByUs = true // from progress.Replacing
		err := r.Run(context.Background())
		if fail != (err != nil) {
			t.Fatalf("failing write %v: Run: %v", fail, err)
		}
		c := r.Status.Find(status.Cordoned)
		if fail {
			if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "stays cordoned") {
				t.Errorf("failed update: Cordoned = %s %q, want True: the node is still cordoned", c.Status, c.Message)
			}
			if slices.Contains(cl.calls, "cordon") || slices.Contains(cl.calls, "uncordon") {
				t.Errorf("failed update: cluster calls %v", cl.calls)
			}
			continue
		}
		if !slices.Contains(cl.calls, "uncordon") || slices.Contains(cl.calls, "cordon") {
			t.Errorf("cluster calls %v: want the inherited cordon lifted, none added", cl.calls)
		}
		if c := r.Status.Find(status.Uncordoned); c.Status != metav1.ConditionTrue {
			t.Errorf("Uncordoned = %s %q", c.Status, c.Message)
		}
	}
}
