package fleet

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// scraper reads the API server's own metrics (/metrics, as admin) and its
// process's CPU time and memory (/proc).
type scraper struct {
	cp     *controlplane.ControlPlane
	client *http.Client
	url    string

	mu      sync.Mutex
	peakRSS int64
}

func newScraper(cp *controlplane.ControlPlane) (*scraper, error) {
	cfg := cp.RestConfig()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the metrics client: %w", err)
	}
	return &scraper{cp: cp, client: client, url: cfg.Host + "/metrics"}, nil
}

// snapshot is what the API server reported at one moment.
type snapshot struct {
	at time.Time
	// requests by verb and resource (resource requests only).
	requests map[reqKey]float64
	// watches is apiserver_longrunning_requests{verb="WATCH"}: the watches
	// open now.
	watches float64
	// watchEvents is apiserver_watch_events_total: events sent to watchers.
	watchEvents float64
	// latency buckets (le → cumulative count) of
	// apiserver_request_duration_seconds for every verb but WATCH and
	// CONNECT.
	latency map[float64]float64
	// latencyBy are the same buckets by verb and resource.
	latencyBy map[reqKey]map[float64]float64
	// listBytes is apiserver_response_sizes_sum of LIST by resource: what
	// the lists returned, in bytes.
	listBytes map[string]float64
	// listReturned is apiserver_storage_list_returned_objects_total by
	// resource: the objects the lists returned.
	listReturned map[string]float64
	cpu          time.Duration
	rss          int64
	// self is the benchmark process's own counters (self.go).
	self selfSnapshot
}

func (s *scraper) snapshot(ctx context.Context) (snapshot, error) {
	snap := snapshot{at: time.Now(), requests: map[reqKey]float64{}, latency: map[float64]float64{},
		latencyBy: map[reqKey]map[float64]float64{}, listBytes: map[string]float64{},
		listReturned: map[string]float64{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return snap, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return snap, fmt.Errorf("scraping %s: %w", s.url, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Bytes(); wanted(line) { // self.go: only then a string
			snap.add(string(line))
		}
	}
	if err := sc.Err(); err != nil {
		return snap, fmt.Errorf("reading %s: %w", s.url, err)
	}
	snap.cpu, snap.rss = procStats(s.cp.APIServerPID())
	snap.self = selfStats()
	return snap, nil
}

// add takes one line of the metrics page.
func (snap *snapshot) add(line string) {
	name, labels, value, ok := parseSample(line)
	if !ok {
		return
	}
	switch name {
	case "apiserver_request_total":
		if labels["resource"] == "" {
			return
		}
		r := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			r += "/" + sub
		}
		snap.requests[reqKey{Verb: labels["verb"], Resource: r}] += value
	case "apiserver_longrunning_requests":
		if labels["verb"] == "WATCH" {
			snap.watches += value
		}
	case "apiserver_watch_events_total":
		snap.watchEvents += value
	case "apiserver_storage_list_returned_objects_total":
		snap.listReturned[labels["resource"]] += value
	case "apiserver_response_sizes_sum":
		if labels["verb"] == "LIST" {
			snap.listBytes[labels["resource"]] += value
		}
	case "apiserver_request_duration_seconds_bucket":
		if v := labels["verb"]; v == "WATCH" || v == "CONNECT" {
			return
		}
		le, err := strconv.ParseFloat(labels["le"], 64)
		if err != nil {
			return
		}
		snap.latency[le] += value
		k := reqKey{Verb: labels["verb"], Resource: labels["resource"]}
		if sub := labels["subresource"]; sub != "" {
			k.Resource += "/" + sub
		}
		if snap.latencyBy[k] == nil {
			snap.latencyBy[k] = map[float64]float64{}
		}
		snap.latencyBy[k][le] += value
	}
}

// parseSample splits `name{k="v",...} value`.
func parseSample(line string) (string, map[string]string, float64, bool) {
	labels := map[string]string{}
	name, rest := line, ""
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", nil, 0, false
		}
		name, rest = line[:i], line[j+1:]
		for _, kv := range splitLabels(line[i+1 : j]) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
	} else if i := strings.IndexByte(line, ' '); i >= 0 {
		name, rest = line[:i], line[i:]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return name, labels, v, err == nil
}

// splitLabels splits on the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// procStats reads a process's CPU time (user+system) and resident memory.
func procStats(pid int) (time.Duration, int64) {
	if pid == 0 {
		return 0, 0
	}
	var cpu time.Duration
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(data)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 13 {
				ut, _ := strconv.ParseInt(f[11], 10, 64)
				st, _ := strconv.ParseInt(f[12], 10, 64)
				cpu = time.Duration(ut+st) * time.Second / 100 // USER_HZ
			}
		}
	}
	var rss int64
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				f := strings.Fields(l)
				if len(f) >= 2 {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					rss = kb << 10
				}
			}
		}
	}
	return cpu, rss
}

// samplePeak follows the API server's resident memory every second until
// ctx ends; peak returns the highest seen since the last reset.
func (s *scraper) samplePeak(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		_, rss := procStats(s.cp.APIServerPID())
		s.mu.Lock()
		s.peakRSS = max(s.peakRSS, rss)
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *scraper) resetPeak() (peak int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	peak, s.peakRSS = s.peakRSS, 0
	return peak
}

// window is what happened between two snapshots.
type window struct {
	took                     time.Duration
	requests                 map[reqKey]float64
	watchesStart, watchesEnd float64
	watchEvents              float64
	cpu                      time.Duration
	rssEnd                   int64
	p99                      float64 // seconds; an upper bound (a bucket's le)
	count                    float64 // requests in the latency histogram
	// slowest are the kinds of request with the highest p99 (at least 10
	// requests), slowest first: "PATCH nodes ≤ 2s (120)".
	slowest []string
	// kinds are every kind of request's p99 and count, most frequent first.
	kinds []kindLatency
	// self is the benchmark process's own cost in the window (self.go).
	self selfWindow
	// listBytes is what the lists returned, by resource, in bytes (gzip
	// compressed when over 128 KiB); listReturned the objects they
	// returned.
	listBytes, listReturned map[string]float64
}

func between(a, b snapshot) window {
	w := window{took: b.at.Sub(a.at), requests: map[reqKey]float64{}, watchesStart: a.watches, watchesEnd: b.watches,
		watchEvents: b.watchEvents - a.watchEvents, cpu: b.cpu - a.cpu, rssEnd: b.rss}
	for k, v := range b.requests {
		if d := v - a.requests[k]; d > 0 {
			w.requests[k] = d
		}
	}
	w.p99, w.count = p99(a.latency, b.latency)
	w.listBytes, w.listReturned = diff(a.listBytes, b.listBytes), diff(a.listReturned, b.listReturned)
	type kind struct {
		k        reqKey
		p99, cnt float64
	}
	var kinds []kind
	for k, bb := range b.latencyBy {
		if p, n := p99(a.latencyBy[k], bb); n >= 10 {
			kinds = append(kinds, kind{k, p, n})
		}
	}
	w.kinds = kindsBetween(a, b)
	w.self = selfBetween(a.self, b.self)
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].p99 > kinds[j].p99 })
	for i := 0; i < len(kinds) && i < 4; i++ {
		w.slowest = append(w.slowest, fmt.Sprintf("%s %s ≤ %s (%.0f)", kinds[i].k.Verb, kinds[i].k.Resource,
			seconds(kinds[i].p99), kinds[i].cnt))
	}
	return w
}

// diff is b − a by key.
func diff(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range b {
		out[k] = v - a[k]
	}
	return out
}

// p99 is the 99th percentile's bucket (an upper bound) of the requests
// between two cumulative histograms, and their number.
func p99(a, b map[float64]float64) (float64, float64) {
	var les []float64
	for le := range b {
		les = append(les, le)
	}
	sort.Float64s(les)
	count := b[math.Inf(1)] - a[math.Inf(1)]
	for _, le := range les {
		if count > 0 && b[le]-a[le] >= 0.99*count {
			return le, count
		}
	}
	return 0, count
}

// nonWatch sums the requests but the watches.
func (w window) nonWatch() float64 {
	n := 0.0
	for k, v := range w.requests {
		if k.Verb != "WATCH" {
			n += v
		}
	}
	return n
}

func (w window) verb(verb string) float64 {
	n := 0.0
	for k, v := range w.requests {
		if k.Verb == verb {
			n += v
		}
	}
	return n
}

func (w window) of(verb, resource string) float64 { return w.requests[reqKey{verb, resource}] }
