package testbed

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"syscall"
	"time"
)

// waitOK polls url until it answers 200, every `every`, at most within;
// what names the server in the error.
func waitOK(ctx context.Context, url, what string, within, every time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer 200 at %s within %s", what, url, within)
		case <-time.After(every):
		}
	}
}

// stopServer stops a server the bed started: SIGTERM, then SIGKILL after
// grace.
func stopServer(cmd *exec.Cmd, grace time.Duration) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}
