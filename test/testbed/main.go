package testbed

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// Main runs a test binary's tests against one bed shared by all of them:
// it starts the bed in a temporary folder named after prefix, hands it to
// use, runs the tests and tears the bed down. When needed returns false (no
// test of the binary wants a bed) it runs the tests without one.
func Main(m *testing.M, prefix string, needed func() bool, use func(*Bed)) {
	if needed != nil && !needed() {
		os.Exit(m.Run())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, err := Start(ctx, dir, os.Stderr)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the test bed:", err)
		os.Exit(1)
	}
	use(b)
	code := m.Run()
	b.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Ignition builds an Ignition 3.4 config from files (path → contents, mode
// 0644) and extra top-level JSON members.
func Ignition(files map[string]string, extra ...string) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var fs []string
	for _, p := range paths {
		fs = append(fs, fmt.Sprintf(`{"path":%q,"mode":420,"overwrite":true,"contents":{"source":"data:;base64,%s"}}`,
			p, base64.StdEncoding.EncodeToString([]byte(files[p]))))
	}
	parts := []string{`"ignition":{"version":"3.4.0"}`, `"storage":{"files":[` + strings.Join(fs, ",") + `]}`}
	parts = append(parts, extra...)
	return "{" + strings.Join(parts, ",") + "}"
}
