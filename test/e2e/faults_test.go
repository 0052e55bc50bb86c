package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultRound is one round of the fault-point matrix: the daemon is killed
// with SIGKILL at point (package daemon/faultpoint) during an update that
// drains and reboots the node, and, when newWhileDown is set, the node's
// desired config moves on while the daemon is down.
type faultRound struct {
	point string // NODECONFD_TEST_KILL_AT
	what  string // where that is, for the table
	// files is the number of files of the update (2 unless set); pods the
	// pods to evict (none unless set).
	files, pods int
	// afterReboot: the point is past the reboot request, so the daemon is
	// started again only once the node booted.
	afterReboot  bool
	newWhileDown bool
}

// faultPoints are the points of an update where a kill is tried, each with
// and without a new desired config while the daemon is down.
var faultPoints = []faultRound{
	{point: "start:prepare", what: "before prepare"},
	{point: "done:prepare", what: "after prepare"},
	{point: "ran:cordon", what: "cordoned, before its record"},
	{point: "done:cordon", what: "after cordon"},
	{point: "drain-evicted:1", what: "mid-drain (1 of 3 pods evicted)", pods: 3},
	{point: "done:drain", what: "after drain"},
	{point: "start:write", what: "before write"},
	{point: "journal-append:1", what: "mid-journal-append (torn entry)"},
	{point: "journal-synced:1", what: "journal durable, no file written"},
	{point: "file-written:200", what: "mid-write (200 of 400 files)", files: 400},
	{point: "ran:write", what: "between the write and its record"},
	{point: "done:write", what: "after write, before the post action"},
	{point: "start:reboot", what: "before the reboot request"},
	{point: "ran:reboot", what: "right after the reboot request", afterReboot: true},
	{point: "done:reboot", what: "after the boot, reboot checked"},
	{point: "done:post-action", what: "after the post action"},
	{point: "done:validate", what: "before uncordon"},
	{point: "ran:uncordon", what: "uncordoned, before its record"},
	{point: "done:uncordon", what: "after uncordon, before finish"},
	{point: "ran:finish", what: "currentConfig written, before its record"},
	{point: "done:finish", what: "before resume"},
	{point: "ran:resume", what: "resumed, before its record"},
	{point: "done:resume", what: "resumed and recorded, before the last status write"},
}

// faultNodes run the rounds side by side (each its share, in order): the
// rounds take about 13 s each, most of it waiting on the node. The
// subtests start last (Go queues parallel subtests behind the waiting
// top-level tests), so the test is kept short by many nodes.
const faultNodes = 11

// The fault-point matrix (issue 10): SIGKILL at every step boundary and
// inside the write, with and without a new desired config while the daemon
// is down; and, side by side, a dropped system bus mid-update (the API
// server restart is TestFaultAPIServerRestart). Every round must converge to exactly its
// final config: the node's managed files are the config's, no temporary
// file or open journal is left, the node is uncordoned and its status says
// Updated=True, NodeDegraded=False and currentConfig. The table of rounds
// is logged at the end.
func TestFaultPoints(t *testing.T) {
	t.Parallel()
	rounds := faultRounds()
	var table faultTable
	t.Run("rounds", func(t *testing.T) {
		for i := range faultNodes {
			t.Run(fmt.Sprintf("node%d", i), func(t *testing.T) {
				t.Parallel()
				n := newFaultNode(t, fmt.Sprintf("fp%d", i))
				for j := i; j < len(rounds); j += faultNodes {
					table.add(n.killRound(t, j+1, rounds[j]))
				}
			})
		}
		t.Run("bus-dropped", func(t *testing.T) {
			t.Parallel()
			n := newFaultNode(t, "fpbus")
			table.add(n.busRound(t, len(rounds)+2))
		})
	})
	t.Log("fault-point rounds:\n" + table.String())
}

// The fault-point matrix's round that restarts the API server once an
// update has cordoned the node: it must converge as the kill rounds do
// (TestFaultPoints). Not parallel: the restart would cut every other
// test's daemons and watches short. Go runs it, like every serial test,
// before the parallel tests start.
func TestFaultAPIServerRestart(t *testing.T) {
	var table faultTable
	n := newFaultNode(t, "fpapi")
	table.add(n.apiRestartRound(t, len(faultRounds())+1))
	t.Log("fault-point rounds:\n" + table.String())
}

// faultRounds are the kill rounds: each fault point without, then with, a
// new desired config while the daemon is down.
func faultRounds() []faultRound {
	var rounds []faultRound
	for _, r := range faultPoints {
		rounds = append(rounds, r)
		r.newWhileDown = true
		rounds = append(rounds, r)
	}
	return rounds
}

// roundResult is one line of the table.
type roundResult struct {
	n            int
	point, what  string
	newWhileDown bool
	err          error
	took         time.Duration
	// reboots counts the node's boots in the round; retries the failed
	// tries the daemon logged ("Update failed; will retry").
	reboots, retries int
}

type faultTable struct {
	mu   sync.Mutex
	rows []roundResult
}

func (tb *faultTable) add(r roundResult) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, r)
}

func (tb *faultTable) String() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	rows := append([]roundResult(nil), tb.rows...)
	for i := 1; i < len(rows); i++ { // by round number
		for j := i; j > 0 && rows[j].n < rows[j-1].n; j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| # | point | where | new config while down | result | reboots | retries | time |\n|---|---|---|---|---|---|---|---|\n")
	pass := 0
	for _, r := range rows {
		res := "converged"
		if r.err != nil {
			res = "FAIL: " + strings.ReplaceAll(r.err.Error(), "\n", "; ")
		} else {
			pass++
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %d | %d | %s |\n", r.n, r.point, r.what, yesNo(r.newWhileDown), res,
			r.reboots, r.retries, r.took.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "%d of %d rounds converged\n", pass, len(rows))
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// killRound runs one round: update to the round's config with the daemon
// armed to kill itself at the point, optionally a new desired config while
// it is down, then the daemon restarted and the node checked.
func (n *faultNode) killRound(t *testing.T, num int, r faultRound) roundResult {
	res := roundResult{n: num, point: r.point, what: r.what, newWhileDown: r.newWhileDown}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	done := n.measure(&res)
	res.err = n.killAndConverge(ctx, t, num, r)
	done()
	if res.err != nil {
		t.Errorf("round %d (%s, new config while down: %s): %v", num, r.point, yesNo(r.newWhileDown), res.err)
		n.repair(t)
	}
	return res
}

func (n *faultNode) killAndConverge(ctx context.Context, t *testing.T, num int, r faultRound) error {
	files := max(r.files, 2)
	b := n.config(t, fmt.Sprintf("%d-b", num), files)
	want := b
	if r.newWhileDown {
		want = n.config(t, fmt.Sprintf("%d-c", num), 2)
	}
	if r.pods > 0 {
		evictablePods(t, n.Name, fmt.Sprintf("r%d", num), r.pods)
	}
	if err := n.StopDaemon(); err != nil {
		return err
	}
	killed := n.ArmKill(r.point)
	boots := n.Sys.Boots()
	if err := n.SetDesired(ctx, b.name); err != nil {
		return err
	}
	if err := n.StartDaemon(); err != nil {
		return err
	}
	if err := n.WaitKilled(ctx, killed); err != nil {
		return err
	}
	if r.afterReboot {
		if err := n.Sys.WaitBoot(ctx, boots+1); err != nil {
			return err
		}
	}
	if r.newWhileDown {
		if err := n.SetDesired(ctx, want.name); err != nil {
			return err
		}
	}
	if err := n.ResumeDaemon(); err != nil {
		return err
	}
	return n.converged(ctx, want)
}

// apiRestartRound restarts the API server once the update has cordoned
// the node.
func (n *faultNode) apiRestartRound(t *testing.T, num int) roundResult {
	res := roundResult{n: num, point: "kube-apiserver restart", what: "after cordon, during drain and write"}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	done := n.measure(&res)
	cfg := n.config(t, fmt.Sprintf("%d-b", num), 2)
	evictablePods(t, n.Name, fmt.Sprintf("r%d", num), 2)
	res.err = func() error {
		if err := n.SetDesired(ctx, cfg.name); err != nil {
			return err
		}
		if err := n.waitStep(ctx, cfg.name, "cordon"); err != nil {
			return err
		}
		if err := bed.CP.RestartAPIServer(ctx); err != nil {
			return err
		}
		return n.converged(ctx, cfg)
	}()
	done()
	if res.err != nil {
		t.Errorf("round %d (API server restart): %v", num, res.err)
	}
	return res
}

// busRound stops the node's D-Bus daemon as the update starts to write 400
// files and a unit (its drain done), and starts it again two seconds later.
func (n *faultNode) busRound(t *testing.T, num int) roundResult {
	res := roundResult{n: num, point: "dbus stopped", what: "mid-write of 400 files and a unit, for 2s"}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	done := n.measure(&res)
	cfg := n.configWithUnit(t, fmt.Sprintf("%d-b", num), 400)
	res.err = func() error {
		if err := n.SetDesired(ctx, cfg.name); err != nil {
			return err
		}
		if err := n.waitStep(ctx, cfg.name, "drain"); err != nil {
			return err
		}
		if out, err := n.Sys.Exec(ctx, "systemctl", "stop", "dbus.socket", "dbus.service"); err != nil {
			return fmt.Errorf("stopping dbus: %v: %s", err, out)
		}
		time.Sleep(2 * time.Second)
		if out, err := n.Sys.Exec(ctx, "systemctl", "start", "dbus.socket", "dbus.service"); err != nil {
			return fmt.Errorf("starting dbus: %v: %s", err, out)
		}
		return n.converged(ctx, cfg)
	}()
	done()
	if res.err != nil {
		t.Errorf("round %d (D-Bus dropped): %v", num, res.err)
	}
	return res
}
