package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Update 6: the daemon is killed with SIGKILL right after each step of a
// reboot update; restarted, it converges to the same end with exactly one
// reboot per update. Two nodes take the steps in turns, side by side.
func TestKilledAfterEachStep(t *testing.T) {
	t.Parallel()
	steps := []string{"detect", "prepare", "cordon", "drain", "write", "reboot", "post-action", "validate", "uncordon", "finish"}
	const nodes = 2
	for shard := range nodes {
		name := fmt.Sprintf("u6-%d", shard)
		var mine []string
		for i := shard; i < len(steps); i += nodes {
			mine = append(mine, steps[i])
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			killedAfterSteps(t, name, mine)
		})
	}
}

// killedAfterSteps runs an update on node nodeName for each step, killing
// the daemon right after it.
func killedAfterSteps(t *testing.T, nodeName string, steps []string) {
	n, log := node(t, nodeName, "rendered-"+nodeName+"-0")
	config(t, "rendered-"+nodeName+"-0", ign(nil))
	podsOn(t, nodeName, 2)
	for i, step := range steps {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		name := fmt.Sprintf("rendered-%s-%d", nodeName, i+1)
		contents := fmt.Sprintf("round %d\n", i+1)
		config(t, name, ign(map[string]string{"/etc/nodeconfd-crash.conf": contents}))
		boots := n.Sys.Boots()
		if err := n.SetDesired(ctx, name); err != nil {
			t.Fatal(err)
		}
		if err := killAfter(ctx, n, name, step); err != nil {
			t.Fatalf("step %s: %v", step, err)
		}
		if err := n.StartDaemon(); err != nil {
			t.Fatal(err)
		}
		if err := waitCurrent(ctx, log, name); err != nil {
			t.Fatalf("after a kill after %s: %v", step, err)
		}
		if got := n.Sys.Boots() - boots; got != 1 {
			t.Errorf("killed after %s: %d reboots, want 1", step, got)
		}
		if got := readNodeFile(t, n, "/etc/nodeconfd-crash.conf"); got != contents {
			t.Errorf("killed after %s: file = %q, want %q", step, got, contents)
		}
		if getNode(t, nodeName).Spec.Unschedulable {
			t.Errorf("killed after %s: node left cordoned", step)
		}
		cancel()
	}
}

// killAfter SIGKILLs the daemon as soon as the node's progress record for
// config lists step as done.
func killAfter(ctx context.Context, n *testbed.Node, config, step string) error {
	path := filepath.Join(n.Sys.Root, "/var/lib/nodeconfd", progress.FileName)
	for {
		if data, err := os.ReadFile(path); err == nil {
			if rec, err := progress.Unmarshal(data); err == nil && rec.Desired == config && rec.Done(step) {
				return n.KillDaemon()
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("step %s of %s never done: %w", step, config, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// A daemon killed in the middle of writing many files: restarted, it
// converges with every file whole and no temporary file left.
func TestKilledWhileWriting(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := "/etc/nodeconfd-many"
	n, log := nodeWithPolicy(t, "u6w", "rendered-u6w-a", "nodeDisruptionPolicy:\n  files:\n  - path: "+dir+"/\n    actions: [{type: None}]\n")
	config(t, "rendered-u6w-a", ign(nil))
	files := map[string]string{}
	for i := 0; i < 400; i++ {
		files[fmt.Sprintf("%s/f%03d.conf", dir, i)] = strings.Repeat(fmt.Sprintf("line %d\n", i), 300)
	}
	config(t, "rendered-u6w-b", ign(files))
	if err := n.SetDesired(ctx, "rendered-u6w-b"); err != nil {
		t.Fatal(err)
	}
	killOnceWritten(ctx, t, n, filepath.Join(dir, "f000.conf"))
	written := 0
	entries, _ := os.ReadDir(filepath.Join(n.Sys.Root, dir))
	written = len(entries)
	t.Logf("killed with %d of %d entries in the folder", written, len(files))
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u6w-b"); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(n.Sys.Root, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(files) {
		var names []string
		for _, e := range entries {
			if _, ok := files[dir+"/"+e.Name()]; !ok {
				names = append(names, e.Name())
			}
		}
		t.Errorf("%d entries in %s, want %d; unexpected: %v", len(entries), dir, len(files), names)
	}
	for p, want := range files {
		if got := readNodeFile(t, n, p); got != want {
			t.Errorf("%s: partial or wrong contents (%d bytes, want %d)", p, len(got), len(want))
		}
	}
}

// SIGTERM during an update finishes the current step, saves progress and
// exits cleanly; restarted, the daemon goes on from the next step.
func TestSIGTERMMidUpdate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, log := node(t, "u6t", "rendered-u6t-a")
	config(t, "rendered-u6t-a", ign(nil))
	config(t, "rendered-u6t-b", ign(map[string]string{"/etc/nodeconfd-term.conf": "b\n"}))
	podsOn(t, "u6t", 3)
	if err := n.SetDesired(ctx, "rendered-u6t-b"); err != nil {
		t.Fatal(err)
	}
	// Stop while the drain runs (the cordon is done).
	path := filepath.Join(n.Sys.Root, "/var/lib/nodeconfd", progress.FileName)
	for {
		data, _ := os.ReadFile(path)
		if rec, err := progress.Unmarshal(data); err == nil && rec.Desired == "rendered-u6t-b" && rec.Done("cordon") {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("cordon never done")
		}
		time.Sleep(2 * time.Millisecond)
	}
	start := time.Now()
	if err := n.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("SIGTERM took %s to stop the daemon", took)
	}
	if !strings.Contains(n.DaemonLog(), "Stopped") {
		t.Error("the daemon did not exit cleanly")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := progress.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	// The SIGTERM lands in the drain (which then finishes and is saved) or,
	// rarely, in the instant between the cordon's save and the drain's
	// start (the runner then stops before the drain). Either way nothing
	// after the drain has run.
	if !rec.Done("cordon") || rec.Done("write") || rec.Done("reboot") {
		t.Errorf("after SIGTERM during the drain, steps done %v; want the cordon done (and the drain, unless it had not started) and no write or reboot", rec.Steps)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u6t-b"); err != nil {
		t.Fatal(err)
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2", b)
	}
}
