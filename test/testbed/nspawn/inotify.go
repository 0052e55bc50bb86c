package nspawn

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// inotifyInstances is the fewest inotify instances per user the host must
// allow. Every node's systemd, journald and D-Bus, and the daemon's drift
// monitor, each hold some, all as root on the host: with the kernel's
// default of 128, a few dozen nodes running side by side (parallel tests)
// use them up, and then a guest's boot hangs ("dialing the system bus: no
// such file") or the daemon's drift monitor fails ("too many open files").
const inotifyInstances = 8192

const inotifyLimit = "/proc/sys/fs/inotify/max_user_instances"

// raiseInotifyLimit raises the host's fs.inotify.max_user_instances to
// inotifyInstances when it is lower (never lowers it).
func raiseInotifyLimit() error {
	data, err := os.ReadFile(inotifyLimit)
	if err != nil {
		return fmt.Errorf("reading %s: %w", inotifyLimit, err)
	}
	if cur, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && cur >= inotifyInstances {
		return nil
	}
	if err := os.WriteFile(inotifyLimit, []byte(strconv.Itoa(inotifyInstances)+"\n"), 0); err != nil {
		return fmt.Errorf("raising %s to %d: %w", inotifyLimit, inotifyInstances, err)
	}
	return nil
}
