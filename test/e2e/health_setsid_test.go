package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Issue 27: a check command that starts a child calling setsid, prints
// escape sequences and hangs is killed at its timeout with that child (its
// cgroup holds it), and the status carries its output without control
// characters.
func TestHealthCommandSetsidChildKilled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const dir = "/etc/nodeconfd-hcs"
	hang := "setsid sleep 3600 </dev/null >/dev/null 2>&1 &\necho $! >/var/tmp/nodeconfd-hcs-pid\n" +
		"printf '\\033[2J\\033]0;title\\007escaped\\n'\nexec sleep 3600\n"
	config(t, "rendered-hcs-a", ign(map[string]string{dir + "/check": "exit 0\n"}))
	config(t, "rendered-hcs-b", ign(map[string]string{dir + "/check": hang}))
	n, log := healthNode(t, "hcs", "rendered-hcs-a", dir, testbed.NodeOptions{},
		"--health-command", "/bin/sh "+dir+"/check", "--health-command-timeout", "3s", "--health-timeout", "20s")
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-hcs-b"); err != nil {
		t.Fatal(err)
	}
	st, err := waitRolledBack(ctx, log, from, "rendered-hcs-b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Conditions {
		if c.Type != "HealthChecked" {
			continue
		}
		if !strings.Contains(c.Message, "escaped") || strings.ContainsAny(c.Message, "\x1b\x07") {
			t.Errorf("HealthChecked message %q: want the output without control characters", c.Message)
		}
	}
	data, err := os.ReadFile(filepath.Join(n.Sys.Root, "/var/tmp/nodeconfd-hcs-pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append([]int{pid}, childrenOf(pid)...) {
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
			t.Errorf("the check command's setsid child %d survived: %s", p, stat)
		}
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			n, _ := strconv.Atoi(e.Name())
			out = append(out, n)
		}
	}
	return out
}
