package fleet

import (
	"bytes"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

// The benchmark process's own cost (item of issue 15): its CPU time, heap
// and goroutines, so that what the simulation costs (N daemons in one
// process) is told apart from what the API server pays.

// selfSnapshot is the process's counters at one moment.
type selfSnapshot struct {
	cpu        time.Duration // user + system
	heap       uint64        // bytes in use by the heap (HeapInuse)
	sys        uint64        // bytes obtained from the OS
	goroutines int
}

func selfStats() selfSnapshot {
	var ru syscall.Rusage
	var cpu time.Duration
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return selfSnapshot{cpu: cpu, heap: ms.HeapInuse, sys: ms.Sys, goroutines: runtime.NumGoroutine()}
}

// selfWindow is the process's cost between two snapshots.
type selfWindow struct {
	cpu   time.Duration
	end   selfSnapshot
	valid bool
}

func selfBetween(a, b selfSnapshot) selfWindow {
	return selfWindow{cpu: b.cpu - a.cpu, end: b, valid: b.goroutines > 0}
}

// selfRow adds the benchmark process's figures, per simulated node.
func selfRow(t *Table, w window, nodes int) {
	if !w.self.valid || nodes == 0 {
		return
	}
	n := float64(nodes)
	t.Add("benchmark process (the N simulated daemons, the tracker, the scraper)",
		"%.2f cores (%s CPU, %.0f ms per node); heap in use at end %d MiB (%.0f KiB per node), from the OS %d MiB; "+
			"%d goroutines (%.0f per node)", w.self.cpu.Seconds()/w.took.Seconds(), w.self.cpu.Round(10*time.Millisecond),
		w.self.cpu.Seconds()*1000/n, w.self.end.heap>>20, float64(w.self.end.heap)/1024/n, w.self.end.sys>>20,
		w.self.end.goroutines, float64(w.self.end.goroutines)/n)
}

// kindLatency is one kind of request's figures in a window.
type kindLatency struct {
	k        reqKey
	p99, cnt float64
}

func kindsBetween(a, b snapshot) []kindLatency {
	var kinds []kindLatency
	for k, bb := range b.latencyBy {
		if p, n := p99(a.latencyBy[k], bb); n > 0 {
			kinds = append(kinds, kindLatency{k, p, n})
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].cnt > kinds[j].cnt })
	return kinds
}

// kindRows adds, for every kind of request of at least min in the window,
// its p99 latency at the API server, its count, and its count per node
// and per unit (an update).
func kindRows(t *Table, w window, nodes int, unit string, units float64, min float64) {
	var parts []string
	for _, k := range w.kinds {
		if k.cnt < min {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s: p99 ≤ %s, %.0f (%.2f/node, %.2f/%s)", k.k.Verb, k.k.Resource,
			seconds(k.p99), k.cnt, k.cnt/float64(nodes), k.cnt/units, unit))
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	t.Add("API server requests by kind (all clients; p99 latency, count, per node, per "+unit+")", "%s",
		strings.Join(parts, "; "))
}

// wanted reports whether a line of the API server's /metrics is one the
// scraper reads: the page is several MB at a fleet's size, and parsing
// every sample's labels was most of the scraper's cost.
func wanted(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("apiserver_")) {
		return false
	}
	for _, p := range []string{"apiserver_request_total{", "apiserver_longrunning_requests{", "apiserver_watch_events_total",
		"apiserver_request_duration_seconds_bucket{", "apiserver_response_sizes_sum{",
		"apiserver_storage_list_returned_objects_total{"} {
		if bytes.HasPrefix(line, []byte(p)) {
			return true
		}
	}
	return false
}
