package fleet

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Table is a measurement's figures, in the order added.
type Table struct {
	Title string
	rows  [][2]string
}

// Add adds a row.
func (t *Table) Add(name, format string, args ...any) {
	t.rows = append(t.rows, [2]string{name, fmt.Sprintf(format, args...)})
}

// Print writes the table as Markdown.
func (t *Table) Print(w io.Writer) {
	fmt.Fprintf(w, "\n### %s\n\n| figure | value |\n|---|---|\n", t.Title)
	for _, r := range t.rows {
		fmt.Fprintf(w, "| %s | %s |\n", r[0], r[1])
	}
}

// byVerb sums requests by verb and lists the biggest kinds:
// "LIST 1000 (nodes 500, machineconfignodes 500), WATCH 2000 (...)".
func byVerb(requests map[reqKey]float64) string {
	verbs := map[string]float64{}
	kinds := map[string][]reqKey{}
	for k, v := range requests {
		verbs[k.Verb] += v
		kinds[k.Verb] = append(kinds[k.Verb], k)
	}
	var names []string
	for v := range verbs {
		names = append(names, v)
	}
	sort.Slice(names, func(i, j int) bool { return verbs[names[i]] > verbs[names[j]] })
	var parts []string
	for _, v := range names {
		ks := kinds[v]
		sort.Slice(ks, func(i, j int) bool { return requests[ks[i]] > requests[ks[j]] })
		var inner []string
		for _, k := range ks {
			inner = append(inner, fmt.Sprintf("%s %.0f", k.Resource, requests[k]))
		}
		parts = append(parts, fmt.Sprintf("%s %.0f (%s)", v, verbs[v], strings.Join(inner, ", ")))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// floats turns client-side counts into the window's form.
func floats(c map[reqKey]int64) map[reqKey]float64 {
	out := map[reqKey]float64{}
	for k, v := range c {
		out[k] = float64(v)
	}
	return out
}

// apiServerRows adds the API server's figures of a window.
func apiServerRows(t *Table, w window) {
	t.Add("API server p99 latency (all verbs but WATCH, CONNECT)", "≤ %s (%.0f requests)", seconds(w.p99), w.count)
	t.Add("slowest kinds of request (p99)", "%s", strings.Join(w.slowest, "; "))
	t.Add("API server CPU", "%.2f cores (%s CPU in %s)", w.cpu.Seconds()/w.took.Seconds(), w.cpu.Round(10*time.Millisecond),
		w.took.Round(100*time.Millisecond))
	t.Add("API server RSS at end", "%d MiB", w.rssEnd>>20)
	t.Add("machine load average at end (2 cores, shared with other agents)", "%s", loadAverage())
	t.Add("watch events sent", "%.0f", w.watchEvents)
	t.Add("watches open at end", "%.0f", w.watchesEnd)
}

func seconds(s float64) string {
	if s == 0 {
		return "n/a"
	}
	return (time.Duration(s * float64(time.Second))).String()
}

// percentile of durations (p in 0..1).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p * float64(len(s)-1))
	return s[i]
}

// loadAverage is /proc/loadavg's first three fields: the test machine is
// shared, and its load bounds what latency figures mean.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
