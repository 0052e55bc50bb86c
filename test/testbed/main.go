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

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// Main runs a test binary's tests against one bed shared by all of them:
// it starts the bed in a temporary folder named after prefix, hands it to
// use, runs the tests and tears the bed down. When needed returns false (no
// test of the binary wants a bed) it runs the tests without one.
func Main(m *testing.M, prefix string, needed func() bool, use func(*Bed)) {
	MainWith(m, prefix, needed, nil, use)
}

// MainWith is Main with the control plane's options from cp (nil: the
// defaults), called after needed, so that they may come from flags.
func MainWith(m *testing.M, prefix string, needed func() bool, cp func() controlplane.Options, use func(*Bed)) {
	if needed != nil && !needed() {
		os.Exit(m.Run())
	}
	var cpo controlplane.Options
	if cp != nil {
		cpo = cp()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, err := StartWith(ctx, dir, os.Stderr, cpo)
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
