package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

type results struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *results) add(s string) { r.mu.Lock(); r.n[s]++; r.mu.Unlock() }
func (r *results) get(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[s]
}

func newNotifier(t *testing.T, url string, res *results, log *zap.Logger) *Notifier {
	t.Helper()
	tpl, err := ParseTemplate(DefaultTemplate + " ({{.Event}}, {{.Config}})")
	if err != nil {
		t.Fatal(err)
	}
	n := &Notifier{URL: url, Template: tpl, Node: "w1", Config: func() string { return "rendered-worker-1" },
		Client: NewClient(5 * time.Second), Result: res.add, Log: log, Now: time.Now}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	n.Start(ctx)
	return n
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not in time", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The update's steps reach the webhook in order, as JSON whose text is
// the template's; a rollback of the health gate too.
func TestNotifications(t *testing.T) {
	var mu sync.Mutex
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &m); err != nil || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("body %q: %v", body, err)
		}
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	defer srv.Close()
	res := &results{n: map[string]int{}}
	n := newNotifier(t, srv.URL+"/hooks/T000/B000/secret", res, zap.NewNop())
	o := Observe(nopObserver{}, n)
	o.PhaseStarted(progress.StepCordon)
	o.PhaseDone(progress.StepCordon, time.Second)
	o.PhaseStarted(progress.StepReboot)
	if err := Units(&systemdtest.Fake{}, n).Reboot(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.PhaseStarted(progress.StepReboot) // again, after the boot: no notification
	o.PhaseDone(progress.StepReboot, time.Minute)
	o.PhaseDone(progress.StepUncordon, time.Second)
	o.UpdateFinished(phases.ResultSucceeded)
	HealthResult(nil, n)("rolled-back")
	o.UpdateFinished(phases.ResultFailed)
	waitFor(t, "five notifications", func() bool { return res.get(ResultSent) == 5 })
	mu.Lock()
	defer mu.Unlock()
	var events []string
	for _, m := range got {
		events = append(events, m["event"].(string))
	}
	if want := "cordoned rebooting uncordoned rolled-back failed"; strings.Join(events, " ") != want {
		t.Errorf("events %v, want %s", events, want)
	}
	if text := got[1]["text"]; text != "nodeconfd: node w1 is rebooting (rebooting, rendered-worker-1)" {
		t.Errorf("text %q", text)
	}
	if got[1]["node"] != "w1" || got[1]["config"] != "rendered-worker-1" || got[1]["time"] == "" {
		t.Errorf("fields %v", got[1])
	}
}

// A webhook that is down or refuses is counted, logged without its URL
// (which may hold a token), and never blocks; a full queue drops.
func TestNotifierDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	core, logs := zapobserver.New(zap.WarnLevel)
	res := &results{n: map[string]int{}}
	n := newNotifier(t, "http://"+addr+"/hooks/secret-token", res, zap.New(core))
	n.Notify(EventCordoned, "was cordoned")
	waitFor(t, "a failure", func() bool { return res.get(ResultFailed) == 1 })
	if logs.Len() != 1 {
		t.Errorf("%d warnings, want 1", logs.Len())
	}
	for _, e := range logs.All() {
		if ctx := fmt.Sprint(e.ContextMap()); strings.Contains(ctx, "secret-token") || !strings.Contains(ctx, "refused") {
			t.Errorf("the warning %s: the webhook's URL logged, or not why", ctx)
		}
	}

	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer refuse.Close()
	res = &results{n: map[string]int{}}
	n = newNotifier(t, refuse.URL, res, zap.NewNop())
	n.Notify(EventCordoned, "was cordoned")
	waitFor(t, "a refusal counted", func() bool { return res.get(ResultFailed) == 1 })

	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	defer slow.Close()
	defer close(block)
	res = &results{n: map[string]int{}}
	n = newNotifier(t, slow.URL, res, zap.NewNop())
	start := time.Now()
	for range queueLen + 10 {
		n.Notify(EventRebooting, "is rebooting")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("notifying blocked for %s", took)
	}
	if d := res.get(ResultDropped); d < 9 {
		t.Errorf("%d dropped, want at least 9 of %d with a queue of %d", d, queueLen+10, queueLen)
	}
}

// A webhook that redirects is not followed: the post counts as failed and
// the redirect's target never hears of the update.
func TestNotifierNoRedirect(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the redirect's target was posted to")
	}))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	res := &results{n: map[string]int{}}
	n := newNotifier(t, redirect.URL, res, zap.NewNop())
	n.Notify(EventCordoned, "was cordoned")
	waitFor(t, "the redirect counted as a failure", func() bool { return res.get(ResultFailed) == 1 })
}

func TestParseTemplate(t *testing.T) {
	for _, bad := range []string{"{{.Node", "{{.Nope}}", "{{template \"x\"}}"} {
		if _, err := ParseTemplate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

type nopObserver struct{}

func (nopObserver) PhaseStarted(string)             {}
func (nopObserver) PhaseDone(string, time.Duration) {}
func (nopObserver) UpdateFinished(string)           {}
func (nopObserver) Waiting(string)                  {}
