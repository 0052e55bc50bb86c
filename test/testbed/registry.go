package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// RegistryPort is the port of a cluster bed's registry, on the host's
// address on the bed's own bridge (so two beds never share it).
const RegistryPort = 5000

// registry is a cluster bed's OCI registry: CNCF Distribution
// (hack/build-registry.sh) with filesystem storage in the bed's folder, on
// plain HTTP at the bridge's gateway; the nodes' containerd is configured
// for it by a hosts.toml (package kubenode), as real clusters configure a
// private registry. The bed pushes its images there and nothing is
// imported into a node.
type registry struct {
	host string // host:port, the images' registry name
	cmd  *exec.Cmd
	out  *os.File
}

// startRegistry runs the registry on addr with its storage and log in dir,
// and waits for its API to answer.
func startRegistry(ctx context.Context, dir string, addr netip.AddrPort, log io.Writer) (*registry, error) {
	bin, err := controlplane.RunHackScript(ctx, "build-registry.sh", log)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "storage"), 0o755); err != nil {
		return nil, fmt.Errorf("making the registry's storage: %w", err)
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	// The secret signs upload state between requests; a fixed one would do
	// for one process, but distribution warns and makes one up without it.
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
  secret: %s
`, filepath.Join(dir, "storage"), addr, hex.EncodeToString(secret))
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return nil, fmt.Errorf("writing the registry's configuration: %w", err)
	}
	out, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		return nil, fmt.Errorf("creating the registry's log: %w", err)
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
	// No tracing exporter: nothing in the bed collects traces.
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting the registry: %w", err)
	}
	r := &registry{host: addr.String(), cmd: cmd, out: out}
	if err := r.waitReady(ctx); err != nil {
		r.stop()
		return nil, fmt.Errorf("%w (log: %s)", err, out.Name())
	}
	return r, nil
}

// waitReady waits for the API's base endpoint, /v2/, to answer 200.
func (r *registry) waitReady(ctx context.Context) error {
	return waitOK(ctx, "http://"+r.host+"/v2/", "the registry", 30*time.Second, 100*time.Millisecond)
}

// stop stops the registry (SIGTERM, then SIGKILL after 5 s); nil-safe.
func (r *registry) stop() {
	if r == nil {
		return
	}
	stopServer(r.cmd, 5*time.Second)
	r.out.Close()
}
