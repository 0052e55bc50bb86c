package testbed

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// Prometheus is a real Prometheus server on loopback or in a real node's
// network (built once from the Go module proxy by hack/build-prometheus.sh),
// for the alert gate's tests and the scrape of the shipped metrics: it
// scrapes the targets its configuration names and evaluates its rules.
type Prometheus struct {
	// URL is its address, http://127.0.0.1:port (or the node's address).
	URL string
	cmd *exec.Cmd
	out *os.File
}

// StartPrometheus starts a Prometheus in dir (its data, configuration and
// log) with config (prometheus.yml, which may name rule files in dir)
// and rules (file name to content), and waits until it is ready.
func (b *Bed) StartPrometheus(ctx context.Context, dir, config string, rules map[string]string) (*Prometheus, error) {
	addr, err := b.ports.addr()
	if err != nil {
		return nil, err
	}
	return b.startPrometheus(ctx, dir, config, rules, addr, nil)
}

// StartPrometheusOn starts a Prometheus as StartPrometheus does, in the
// network namespace of the real node n, as a Prometheus on the cluster's
// network: it reaches the node's pods and the other nodes, and the API
// server at the kubernetes Service's address. It listens on the node's
// address, which the host reaches.
func (b *Bed) StartPrometheusOn(ctx context.Context, n *KubeNode, dir, config string, rules map[string]string) (*Prometheus, error) {
	leader, err := n.Sys.Leader()
	if err != nil {
		return nil, err
	}
	netns := fmt.Sprintf("--net=/proc/%d/ns/net", leader)
	return b.startPrometheus(ctx, dir, config, rules, net.JoinHostPort(n.IP.String(), "9090"),
		[]string{"nsenter", netns, "--"})
}

// startPrometheus starts the server listening on addr, its command line
// after wrap (none: as is).
func (b *Bed) startPrometheus(ctx context.Context, dir, config string, rules map[string]string, addr string,
	wrap []string) (*Prometheus, error) {
	bin, err := controlplane.RunHackScript(ctx, "build-prometheus.sh", b.Log)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{"prometheus.yml": config}
	for name, text := range rules {
		files[name] = text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	out, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	argv := append(append([]string(nil), wrap...), bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting prometheus: %w", err)
	}
	p := &Prometheus{URL: "http://" + addr, cmd: cmd, out: out}
	if err := p.waitReady(ctx); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, out.Name())
	}
	return p, nil
}

// waitReady waits for /-/ready to answer 200.
func (p *Prometheus) waitReady(ctx context.Context) error {
	return waitOK(ctx, p.URL+"/-/ready", "prometheus", time.Minute, 200*time.Millisecond)
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s).
func (p *Prometheus) Stop() {
	stopServer(p.cmd, 10*time.Second)
	p.out.Close()
}
