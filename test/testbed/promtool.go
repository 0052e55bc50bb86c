package testbed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// Promtool returns the path of promtool, built once from the Go module proxy
// by hack/build-promtool.sh (cached in ~/.cache/nodeconfd); the script's
// set-up lines go to log.
func Promtool(ctx context.Context, log io.Writer) (string, error) {
	path, err := controlplane.RunHackScript(ctx, "build-promtool.sh", log)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("checking promtool: %w", err)
	}
	return path, nil
}

// RunPromtool runs promtool with args (in dir, when set) and stdin, and
// returns what it printed; an error when it exits non-zero, with its output.
func RunPromtool(ctx context.Context, promtool, dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, promtool, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("promtool %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// MetricsPage returns the daemon's /metrics page as scraped.
func (n *Node) MetricsPage(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.MetricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping node %s: %w", n.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping node %s: %s", n.Name, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
