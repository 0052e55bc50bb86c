package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkContainerd imports the archive into a real containerd (its own root,
// state and socket under a temporary directory) the way a node is given the
// image (`ctr -n k8s.io images import`), then runs it with runc: the
// entrypoint with its default arguments (`start --root-mount=/rootfs`, which
// stops at the missing node name) and `nodeconfd version`. It needs root and
// Debian's containerd package (containerd, ctr, runc); without them it skips.
func checkContainerd(t *testing.T, archive, ref, version string) {
	for _, tool := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (apt-get install containerd)", tool)
		}
	}
	if os.Getuid() != 0 {
		t.Skip("containerd needs root")
	}
	sock := startContainerd(t)
	ctr := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "ctr", append([]string{"-a", sock, "-n", "k8s.io"}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := ctr("images", "import", archive); err != nil {
		t.Fatalf("ctr images import: %v: %s", err, out)
	}
	out, err := ctr("images", "ls", "-q")
	if err != nil || !strings.Contains("\n"+out, "\n"+ref+"\n") {
		t.Fatalf("ctr images ls -q: %q, %v; want %s", out, err, ref)
	}
	out, err = ctr("run", "--rm", ref, "nodeconfd-version", "/usr/bin/nodeconfd", "version")
	if err != nil || strings.TrimSpace(out) != version {
		t.Errorf("ctr run %s nodeconfd version: %q, %v; want %q", ref, out, err, version)
	}
	// ctr run reports the task's exit status in its own: 1, the daemon refusing to start.
	out, _ = ctr("run", "--rm", ref, "nodeconfd-start")
	if !strings.Contains(out, "--node-name (or $NODE_NAME) is required") {
		t.Errorf("ctr run %s (entrypoint and default arguments): %q, want the start command's refusal", ref, out)
	}
}

// startContainerd runs containerd on a private root, state and socket (no
// CRI plugin: nothing here is a kubelet) and returns the socket. It is
// stopped when the test ends.
func startContainerd(t *testing.T) string {
	dir := t.TempDir()
	sock := filepath.Join(dir, "containerd.sock")
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, sock+".ttrpc")
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting containerd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := exec.CommandContext(t.Context(), "ctr", "-a", sock, "version").Run()
		if err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("containerd did not serve %s in 30s: %v\n%s", sock, err, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
