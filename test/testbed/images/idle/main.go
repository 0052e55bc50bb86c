// Command idle is the test bed's sandbox ("pause") and workload container:
// it does nothing until SIGTERM or SIGINT and then exits 0 at once, as the
// kubelet expects of both. As a sandbox's PID 1 it also reaps the zombies
// the pod's other processes leave. "idle ready" exits 0 at once: an exec
// probe for workloads that need one.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "ready" {
		return
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
