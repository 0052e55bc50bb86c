package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A real node's absolute symlinks (RHEL's /etc/pki/tls/certs/ca-bundle.crt
// links to /etc/pki/ca-trust/...): a file under a root-owned folder link
// with an absolute target lands in the link's target, read relative to the
// node root, and a file whose own path is such a link replaces the link,
// its target left alone; disabling a unit with no unit file is done
// already. (The two entries reaching one file through such a link are in
// the hostile corpus: nodepath-two-entries-one-file.yaml.)
func TestAbsoluteSymlinksOnNode(t *testing.T) {
	t.Parallel()
	n, log := nodeWithPolicy(t, "absl", "rendered-absl-base", "nodeDisruptionPolicy:\n  files:\n  - path: /etc/nodeconfd-pki/\n    actions: [{type: None}]\n"+
		"  units:\n  - name: nodeconfd-nosuch.service\n    actions: [{type: None}]\n")
	config(t, "rendered-absl-base", ign(nil))
	config(t, "rendered-absl-pki", ign(map[string]string{
		"/etc/nodeconfd-pki/certs/extra.pem": "extra\n",
		"/etc/nodeconfd-pki/bundle.crt":      "bundle\n",
	}, `"systemd":{"units":[{"name":"nodeconfd-nosuch.service","enabled":false}]}`))

	root := n.Sys.Root
	real := filepath.Join(root, "etc/nodeconfd-pki/real")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "bundle.pem"), []byte("system bundle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"certs": "/etc/nodeconfd-pki/real", "bundle.crt": "/etc/nodeconfd-pki/real/bundle.pem"} {
		if err := os.Symlink(target, filepath.Join(root, "etc/nodeconfd-pki", link)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := n.SetDesired(ctx, "rendered-absl-pki"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-absl-pki"); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, n, "/etc/nodeconfd-pki/real/extra.pem"); got != "extra\n" {
		t.Errorf("the link's target folder holds %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(root, "etc/nodeconfd-pki/bundle.crt")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("bundle.crt: %v, %v; want the file in place of the link", fi, err)
	}
	if got := readNodeFile(t, n, "/etc/nodeconfd-pki/real/bundle.pem"); got != "system bundle\n" {
		t.Errorf("the replaced link's target holds %q", got)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
}
