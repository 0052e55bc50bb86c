package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// setMemoryLimit sets the Go runtime's soft memory limit to 90% of the
// container's memory limit, so that the garbage collector works harder
// near the limit instead of letting garbage push the daemon into the OOM
// killer: while it plans an update at the size caps, the daemon's live
// heap is about twice --max-config-size, and its garbage would double that
// again. GOMEMLIMIT, when set, wins. It returns the limit set, 0 for none.
func setMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	// The container's memory limit: cgroup v2, then v1 (which reports no
	// limit as a huge number).
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<50 { // "max", or v1's "unlimited"
			return 0
		}
		limit := n / 10 * 9
		debug.SetMemoryLimit(limit)
		return limit
	}
	return 0
}
