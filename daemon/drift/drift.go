// Package drift is the config drift monitor: it watches (fsnotify) the
// folders of every file and unit of the config the node runs, and reports
// when the on-disk state stops, or starts again, matching the config.
package drift

import (
	"context"
	"path"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// settle is how long the monitor waits after a change before checking, so a
// burst of events (an editor's temp file and rename) is checked once.
// maxSettle bounds the wait from a burst's first event: a steady trickle
// of events (a process rewriting a watched file every 100 ms) must not put
// the check, and a drift report, off forever.
const (
	settle    = 200 * time.Millisecond
	maxSettle = 2 * time.Second
)

// settleWait is how long to wait before checking after an event at now,
// in a burst that began at first.
func settleWait(first, now time.Time) time.Duration {
	left := first.Add(maxSettle).Sub(now)
	return max(0, min(settle, left))
}

// Monitor watches the node for drift from one config.
type Monitor struct {
	Host phases.Host
	// Units, when set, is the node's systemd: the units' enablement is
	// checked too.
	Units phases.Units
	// Abs maps a node path to the host path to watch.
	Abs func(nodePath string) string
	// SSHKeysPath, when set, gives the node path of a user's
	// authorized_keys (its home is the node's), whose folders are watched
	// for each user the config gives keys.
	SSHKeysPath func(user string) (string, error)
	Log         *zap.Logger
	// Changed receives the drift state after every check that changes it:
	// nil when the node matches the config again, else what differs.
	Changed func(err error)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// keepWhole is the largest file whose contents the monitor keeps; bigger
// ones it keeps as digests (see plan.Config.Digested).
const keepWhole = 64 << 10

// Watch (re)starts watching cfg's files and units. It keeps a digested
// copy of cfg, not its big files' contents.
func (m *Monitor) Watch(ctx context.Context, cfg plan.Config) error {
	m.Stop()
	cfg = cfg.Digested(keepWhole)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	dirs := map[string]bool{}
	for p := range cfg.Files {
		dirs[path.Dir(p)] = true
	}
	for n, u := range cfg.Units {
		dirs["/etc/systemd/system"] = true
		if len(u.Dropins) > 0 {
			dirs["/etc/systemd/system/"+n+".d"] = true
		}
	}
	for _, d := range enablementDirs(m.Abs, cfg) {
		dirs[d] = true
	}
	if m.SSHKeysPath != nil {
		for user := range cfg.SSHKeys {
			// The home too: the user may replace ~/.ssh itself.
			if p, err := m.SSHKeysPath(user); err != nil {
				m.Log.Warn("Cannot watch SSH keys for drift", zap.String("user", user), zap.Error(err))
			} else {
				dirs[path.Dir(p)], dirs[path.Dir(path.Dir(p))] = true, true
			}
		}
	}
	for d := range dirs {
		if err := w.Add(m.Abs(d)); err != nil {
			m.Log.Warn("Cannot watch folder for drift", zap.String("dir", d), zap.Error(err))
		}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.mu.Lock()
	m.cancel, m.done = cancel, make(chan struct{})
	done := m.done
	m.mu.Unlock()
	go m.loop(ctx, w, cfg, done)
	return nil
}

// Stop stops watching; it returns once the watcher is closed.
func (m *Monitor) Stop() {
	m.mu.Lock()
	cancel, done := m.cancel, m.done
	m.cancel, m.done = nil, nil
	m.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (m *Monitor) loop(ctx context.Context, w *fsnotify.Watcher, cfg plan.Config, done chan struct{}) {
	defer close(done)
	defer w.Close()
	var timer <-chan time.Time
	var first time.Time // the pending burst's first event
	var last error
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-w.Events:
			if !ok {
				return
			}
			now := time.Now()
			if timer == nil {
				first = now
			}
			timer = time.After(settleWait(first, now))
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			m.Log.Warn("Drift watcher error", zap.Error(err))
		case <-timer:
			timer = nil
			// The same check as the update's validation: files, units,
			// their enablement and SSH keys.
			err := phases.CheckOnDisk(ctx, m.Host, m.Units, cfg)
			if (err == nil) != (last == nil) || (err != nil && err.Error() != last.Error()) {
				last = err
				m.Changed(err)
			}
		}
	}
}
