package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// A webhook receiver on loopback records the notifications of an update
// that reboots, in order: cordoned, rebooting, uncordoned, each naming the
// node and the config. A node whose webhook is down updates all the same.
func TestNotifications(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var got []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text, Event, Node, Config string }
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Errorf("notification: %v", err)
		}
		mu.Lock()
		got = append(got, m.Event+" "+m.Node+" "+m.Config+": "+m.Text)
		mu.Unlock()
	}))
	defer recv.Close()
	urlFile := filepath.Join(t.TempDir(), "webhook")
	if err := os.WriteFile(urlFile, []byte(recv.URL+"/hooks/token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config(t, "rendered-notify-a", ign(nil))
	config(t, "rendered-notify-b", ign(map[string]string{"/etc/motd.d/notify": "b\n"}))
	n, log := nodeOpts(t, "notify-1", "rendered-notify-a", testbed.NodeOptions{ExtraArgs: []string{
		"--notify-url-file", urlFile, "--notify-template", "{{.Node}} {{.Text}}"}})
	down, downLog := nodeOpts(t, "notify-2", "rendered-notify-a", testbed.NodeOptions{ExtraArgs: []string{
		"--notify-url", "http://" + closedPort(t) + "/hook"}})
	for _, node := range []*testbed.Node{n, down} {
		if err := node.SetDesired(ctx, "rendered-notify-b"); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []*testbed.StatusLog{log, downLog} {
		if err := waitCurrent(ctx, l, "rendered-notify-b"); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"cordoned notify-1 rendered-notify-b: notify-1 was cordoned, to be drained",
		"rebooting notify-1 rendered-notify-b: notify-1 is rebooting",
		"uncordoned notify-1 rendered-notify-b: notify-1 was uncordoned",
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		have := strings.Join(got, "\n")
		mu.Unlock()
		if have == strings.Join(want, "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("notifications:\n%s\nwant:\n%s", have, strings.Join(want, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	page, err := down.MetricsPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The daemon that runs since the reboot sent one: the uncordon's.
	if !strings.Contains(string(page), `nodeconfd_notifications_total{result="failed"} 1`) {
		t.Errorf("the node whose webhook is down did not count its failure:\n%s", grepLines(string(page), "nodeconfd_notifications"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
