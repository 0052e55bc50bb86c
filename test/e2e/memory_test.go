package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Each time the node settles (at start, after an update), the daemon gives
// back its free heap to the OS: the log says so with the heap released
// before and after, and after is not smaller.
func TestMemoryReleasedWhenSettled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	config(t, "rendered-mem-a", ign(nil))
	config(t, "rendered-mem-b", ign(map[string]string{"/etc/containers/registries.d/mem.yaml": "docker: {}\n"}))
	n, log := node(t, "mem", "rendered-mem-a")
	releases := func(want int) []map[string]any {
		t.Helper()
		var lines []map[string]any
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			lines = lines[:0]
			for line := range strings.SplitSeq(n.DaemonLog(), "\n") {
				_, fields, ok := strings.Cut(line, "Settled; released memory\t")
				if !ok {
					continue
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(fields), &m); err != nil {
					t.Fatalf("release log line %q: %v", line, err)
				}
				lines = append(lines, m)
			}
			if len(lines) >= want || time.Now().After(deadline) {
				break
			}
		}
		if len(lines) != want {
			t.Fatalf("memory released %d times, want %d", len(lines), want)
		}
		return lines
	}
	releases(1) // at start
	if err := n.SetDesired(ctx, "rendered-mem-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-mem-b"); err != nil {
		t.Fatal(err)
	}
	for i, m := range releases(2) { // and after the update
		before, _ := m["heapReleasedKiBBefore"].(float64)
		after, _ := m["heapReleasedKiBAfter"].(float64)
		if after <= 0 || after < before {
			t.Errorf("release %d: heap released to the OS %v KiB before, %v KiB after", i+1, before, after)
		}
	}
}
