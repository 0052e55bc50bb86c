// Package nspawn runs test nodes as systemd-nspawn containers: each node
// boots a real systemd (Debian bookworm, built by hack/node-image.sh) on its
// own overlay of the cached image, with its system bus socket reachable
// from the host. A guest reboot restarts the container on the same root, so
// files written before the reboot are still there after it, as on a disk.
//
// Needs root, systemd-nspawn, and a cgroup v2 hierarchy (pure or hybrid).
package nspawn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configure a node.
type Options struct {
	// Name is the node's host name, e.g. "worker-0".
	Name string
	// ImageDir is the base root filesystem, from Image. It is never written.
	ImageDir string
	// WorkDir is the node's own scratch folder (e.g. t.TempDir()): it holds
	// the overlay's upper layer, which lives as long as the node.
	WorkDir string
	// Log, if set, receives nspawn's output and the guest's console.
	Log io.Writer
	// OnDown, if set, is called each time the guest went down: before the
	// container is started again after a reboot, and once at the end.
	OnDown func()
	// OnRunning, if set, is called each time a boot of the guest reached
	// "running" (or "degraded").
	//
	// Hooks run one at a time, never concurrently with each other, on the
	// node's own goroutines; a hook that blocks delays the node, and a hook
	// must not call Stop (Stop waits for the hooks).
	OnRunning func()
	// Setup, if set, is called once with the node's merged root before its
	// first boot, to add files to the node's overlay.
	Setup func(root string) error

	// The options below make a node for a real kubelet and container
	// runtime (package kubenode).

	// Bridge, if set, puts the node's network namespace on that host
	// bridge (a veth pair, the guest's end host0) instead of a private
	// network with no link out.
	Bridge string
	// BindRO binds host paths (keys) read-only at guest paths (values).
	BindRO map[string]string
	// LegacyCgroups boots the guest on the host's cgroup v1 controller
	// hierarchies, in a cgroup namespace, each in a cgroup of the node's
	// own (legacy.go), with every capability, and with the host's /dev/kmsg
	// (the kubelet's OOM watcher reads it).
	LegacyCgroups bool
}

// A Node is a booted systemd-nspawn container. Its fields are read-only.
type Node struct {
	// Name is the node's host name.
	Name string
	// Root is the node's merged root folder on the host, the daemon's
	// --root-mount. Writes go to the node's overlay upper layer.
	Root string
	// BusAddress is the guest's system bus as seen from the host:
	// "unix:path=<host dir>/system_bus_socket".
	BusAddress string

	opts    Options
	machine string // nspawn's --machine, unique on the host
	busDir  string // host folder bound at the guest's /run/dbus
	cg      *cgroup
	legacy  *legacyCgroups // with Options.LegacyCgroups

	mu       sync.Mutex
	stopping bool
	proc     *os.Process   // the current nspawn, nil between boots
	boots    int           // how many times nspawn was started
	running  int           // the last boot seen running
	changed  chan struct{} // closed and replaced when boots or running change
	done     chan struct{} // closed when the supervisor has returned
	exitErr  error         // why the supervisor returned

	stopOnce sync.Once
	stopErr  error
}

// stopTimeout bounds how long Stop waits for the guest to power off before
// it kills everything.
const stopTimeout = 30 * time.Second

var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?$`)

// Start mounts the node's root and boots it. It returns once nspawn has been
// started; use WaitRunning (or WaitBoot) to wait for the boot to finish.
// Stop the node with Stop. ctx bounds only the start, not the node's life.
func Start(ctx context.Context, opts Options) (*Node, error) {
	if !validName.MatchString(opts.Name) {
		return nil, fmt.Errorf("starting node %q: name must be a short lower-case host name", opts.Name)
	}
	if opts.ImageDir == "" || opts.WorkDir == "" {
		return nil, fmt.Errorf("starting node %s: ImageDir and WorkDir are required", opts.Name)
	}
	if err := raiseInotifyLimit(); err != nil {
		return nil, fmt.Errorf("starting node %s: %w", opts.Name, err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	n := &Node{
		Name:    opts.Name,
		Root:    filepath.Join(opts.WorkDir, "root"),
		opts:    opts,
		machine: opts.Name + "-" + hex.EncodeToString(suffix),
		busDir:  filepath.Join(opts.WorkDir, "bus"),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if err := n.setUp(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("starting node %s: %w", n.Name, err), n.tearDown())
	}
	cmd, err := n.spawn()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting node %s: %w", n.Name, err), n.tearDown())
	}
	go n.supervise(cmd)
	return n, nil
}

// setUp mounts the overlay, writes the node's identity and makes its cgroup.
func (n *Node) setUp(ctx context.Context) error {
	upper := filepath.Join(n.opts.WorkDir, "upper")
	work := filepath.Join(n.opts.WorkDir, "work")
	for _, dir := range []string{upper, work, n.Root, n.busDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	// A socket path must fit in sun_path (108 bytes).
	if len(n.busDir) > 80 {
		dir, err := os.MkdirTemp("", "nspawn-bus-")
		if err != nil {
			return fmt.Errorf("creating a bus folder: %w", err)
		}
		n.busDir = dir
	}
	n.BusAddress = "unix:path=" + filepath.Join(n.busDir, "system_bus_socket")

	for _, p := range []string{n.opts.ImageDir, upper, work} {
		if strings.ContainsAny(p, ",:") {
			return fmt.Errorf("overlay path %q must not contain ',' or ':'", p)
		}
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", n.opts.ImageDir, upper, work)
	if err := syscall.Mount("overlay", n.Root, "overlay", 0, data); err != nil {
		return fmt.Errorf("mounting overlay %s on %s: %w", data, n.Root, err)
	}
	if err := n.writeIdentity(); err != nil {
		return err
	}
	if n.opts.Setup != nil {
		if err := n.opts.Setup(n.Root); err != nil {
			return fmt.Errorf("setting up the root: %w", err)
		}
	}
	cg, err := newCgroup(n.Name)
	if err != nil {
		return err
	}
	n.cg = cg
	if n.opts.LegacyCgroups {
		if n.legacy, err = newLegacyCgroups(n.Name, strings.TrimPrefix(n.machine, n.Name+"-")); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// writeIdentity gives the node its own machine ID and host name, unless an
// earlier life of the same WorkDir already did.
func (n *Node) writeIdentity() error {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	files := map[string]string{
		"etc/machine-id": hex.EncodeToString(id) + "\n",
		"etc/hostname":   n.Name + "\n",
	}
	for rel, content := range files {
		path := filepath.Join(n.Root, rel)
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			continue
		}
		if err := os.WriteFile(path, []byte(content), 0o444); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// Boots returns how many times nspawn was started for this node: 1 after
// Start, 2 after the first guest reboot, and so on.
func (n *Node) Boots() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.boots
}

// WaitBoot waits until boot number boot (1 is the first) has reached
// "running". Unlike WaitRunning it cannot be fooled by a guest that was
// asked to reboot but still answers from its old boot.
func (n *Node) WaitBoot(ctx context.Context, boot int) error {
	for {
		n.mu.Lock()
		running, changed := n.running, n.changed
		n.mu.Unlock()
		if running >= boot {
			return nil
		}
		select {
		case <-changed:
		case <-n.done:
			return fmt.Errorf("waiting for boot %d of node %s: node is down: %w", boot, n.Name, n.exitErr)
		case <-ctx.Done():
			return fmt.Errorf("waiting for boot %d of node %s: %w", boot, n.Name, ctx.Err())
		}
	}
}

// CRIOReloads counts the reloads of the stand-in crio.service.
func (n *Node) CRIOReloads() (int, error) {
	return n.countLines("var/lib/crio-reloads")
}

// KubeletReloads counts the reloads of the stand-in kubelet.service.
func (n *Node) KubeletReloads() (int, error) {
	return n.countLines("var/lib/kubelet-reloads")
}

func (n *Node) countLines(rel string) (int, error) {
	path := filepath.Join(n.Root, rel)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return strings.Count(string(b), "\n"), nil
}
