package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// startHelp runs `nodeconfd start --help` in process and returns what it
// printed on stdout.
func startHelp(t *testing.T) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	_, perr := parseFlags([]string{"--help"})
	os.Stdout = stdout
	w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(perr, flag.ErrHelp) {
		t.Fatalf("parseFlags(--help): %v, want flag.ErrHelp", perr)
	}
	return string(out)
}

// TestStartHelpGroupsEveryFlag: start's help shows its flags by group,
// the groups of the issue in order, every flag in one (none under Other)
// and every grouped name a real flag.
func TestStartHelpGroupsEveryFlag(t *testing.T) {
	out := startHelp(t)
	last := -1
	for _, title := range []string{"Cluster:", "Node:", "Drain:", "OS:", "Logging and metrics:"} {
		i := strings.Index(out, "\n"+title+"\n")
		if i < 0 || i < last {
			t.Errorf("group %q missing or out of order in:\n%s", title, out)
		}
		last = i
	}
	if strings.Contains(out, "\nOther:\n") {
		t.Errorf("flags without a group (add them to startFlagGroups):\n%s", out[strings.Index(out, "\nOther:\n"):])
	}
	seen := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "  --"); ok {
			seen[strings.Fields(name)[0]]++
		}
	}
	for _, g := range startFlagGroups() {
		for _, name := range g.flags {
			if seen[name] != 1 {
				t.Errorf("flag --%s of group %s shown %d times, want once (is it a flag?)", name, g.title, seen[name])
			}
		}
	}
	if !strings.Contains(out, "  --drain-timeout duration\n") || !strings.Contains(out, `(default "127.0.0.1:8798")`) {
		t.Errorf("a flag's type or default is missing:\n%s", out)
	}
}

func TestUsageListsEveryCommand(t *testing.T) {
	var b bytes.Buffer
	writeUsage(&b)
	for _, c := range commands() {
		if !strings.Contains(b.String(), "\n  nodeconfd "+c.name) {
			t.Errorf("usage does not list %s:\n%s", c.name, b.String())
		}
	}
	for _, d := range referencePages { // the pages exist, and the README links them too
		if _, err := os.Stat(filepath.Join("..", "..", d.path)); err != nil || !strings.Contains(b.String(), d.path) {
			t.Errorf("usage points to %s: %v", d.path, err)
		}
		if readme, err := os.ReadFile("../../README.md"); err != nil || !strings.Contains(string(readme), "("+d.path+")") {
			t.Errorf("README does not link %s (%v)", d.path, err)
		}
	}
	for _, arg := range []string{"-h", "--help", "help"} {
		if !isHelp(arg) {
			t.Errorf("%s is not taken for help", arg)
		}
	}
}

func TestStartFlagErrorPointsToHelp(t *testing.T) {
	_, err := parseFlags([]string{"--no-such-flag"})
	if err == nil || !strings.Contains(err.Error(), "no-such-flag") || !strings.Contains(err.Error(), "nodeconfd start --help") {
		t.Errorf("parseFlags(--no-such-flag): %v, want the flag named and a pointer to --help", err)
	}
}
