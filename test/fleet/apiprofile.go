package fleet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// profileAPIServer writes a CPU profile of kube-apiserver over d (its
// /debug/pprof, as admin) to path: where the API server spends its time
// during a roll (`go tool pprof path`). It returns at once; the profile
// is done when the returned channel closes.
func (f *Fleet) profileAPIServer(ctx context.Context, d time.Duration, path string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := strings.TrimSuffix(f.metrics.url, "/metrics") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds()))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err == nil {
			var resp *http.Response
			if resp, err = f.metrics.client.Do(req); err == nil {
				defer resp.Body.Close()
				var out *os.File
				if out, err = os.Create(path); err == nil {
					_, err = io.Copy(out, resp.Body)
					out.Close()
				}
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "profiling kube-apiserver: %v\n", err)
		}
	}()
	return done
}
