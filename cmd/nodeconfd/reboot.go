package main

import (
	"context"
	"flag"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/daemon/osupdate"
)

// rebootOptions are the flags of reboots on request (kured's job): the
// sentinel file that asks for one, and how often an idle daemon looks.
type rebootOptions struct {
	sentinel, command string
	every             time.Duration
}

func addRebootFlags(fs *flag.FlagSet) *rebootOptions {
	r := &rebootOptions{}
	fs.StringVar(&r.sentinel, "reboot-sentinel", daemon.DefaultRebootSentinel, "a file on the node whose presence asks "+
		"for a reboot, as Debian's and Ubuntu's package tools write it (/var/run stands for /run); the reboot waits for "+
		"the pool controller's grant, drains, and passes the health gate like an update (empty: none)")
	fs.StringVar(&r.command, "reboot-check-command", "", "a command run in the host root (chrooted, no shell: words "+
		"separated by spaces) at each check while idle: exit 0 asks for a reboot, as kured's --reboot-sentinel-command "+
		"(e.g. a script that exits 0 when the node needs a reboot)")
	fs.DurationVar(&r.every, "reboot-check-interval", daemon.DefaultRebootCheckInterval,
		"how often an idle daemon looks for --reboot-sentinel and runs --reboot-check-command")
	return r
}

// check validates the flags, naming the flag at fault. /var/run/… is
// /run/… (a link to it on every systemd system, which the daemon's
// confined reads of the node do not follow out of place).
func (r *rebootOptions) check() error {
	if r.every < time.Second {
		return fmt.Errorf("--reboot-check-interval %s: want at least 1s", r.every)
	}
	if r.sentinel == "" {
		return nil
	}
	if strings.HasPrefix(r.sentinel, "/var/run/") {
		r.sentinel = "/run/" + strings.TrimPrefix(r.sentinel, "/var/run/")
	}
	if !path.IsAbs(r.sentinel) || path.Clean(r.sentinel) != r.sentinel || r.sentinel == "/" ||
		strings.ContainsRune(r.sentinel, 0) || r.sentinel == "/var/lib/nodeconfd" ||
		strings.HasPrefix(r.sentinel, "/var/lib/nodeconfd/") {
		return fmt.Errorf("--reboot-sentinel %q: want a clean absolute file path outside /var/lib/nodeconfd", r.sentinel)
	}
	return nil
}

// runInRoot runs a check command in the node's root, as the health
// gate's command runs: chrooted, a clean environment, its own cgroup,
// killed whole after a minute.
func runInRoot(root string) func(ctx context.Context, argv []string) error {
	return func(ctx context.Context, argv []string) error {
		_, err := osupdate.Chroot{Root: root, Timeout: time.Minute, Cgroup: true}.Run(ctx, argv[0], argv[1:]...)
		return err
	}
}
