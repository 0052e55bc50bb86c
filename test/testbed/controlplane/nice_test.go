package controlplane

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Every thread of the process gets the nice value (raising it needs no
// privilege; the fleet benchmark lowers it as root).
func TestSetNice(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := setNice(cmd.Process.Pid, 7); err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's name, which is in parentheses: the
	// nice value is the 19th field of the line, the 17th after the name.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if got := fields[16]; got != "7" {
		t.Errorf("nice value %s, want 7", got)
	}
	if err := setNice(cmd.Process.Pid, 0); err != nil {
		t.Fatal(err)
	}
}
