// Package hostfs is the daemon's only way to touch the node's files.
//
// Every access goes through an os.Root opened on the node's root mount, so no
// path can leave it through ".." or a symlink. Paths in the API are absolute
// node paths such as /etc/foo.conf.
//
// Layout of the daemon's state on the node, under /var/lib/nodeconfd (0700):
//
//	orig/<path>    the original of <path>, saved before the daemon first
//	               overwrote it (same contents, mode and owner; a symlink
//	               is saved as a symlink)
//	noorig/<path>  empty marker: <path> did not exist before the daemon
//	               first wrote it
//	restored/<path>  empty marker: the original of <path> was put back, so
//	               removing <path> again must leave it alone
//	txn/<id>/journal  undo journal of an update in progress: the paths'
//	               states, and the units' enablement (see Txn, txnunits.go)
//	txn/<id>/data     the contents the journal's entries point into; a
//	               file first written by the transaction points at its
//	               orig/ backup instead, so an original is copied once
//	<name>         small state files (WriteState, ReadState)
//
// Crash-safety rules that every operation follows:
//   - new bookkeeping (a backup, a marker, a journal entry) is durable before
//     the node change it protects is made;
//   - bookkeeping is deleted only after the node change that made it
//     unnecessary is durable;
//   - every step is idempotent, so re-running an interrupted operation
//     converges.
package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

const (
	stateRel  = "var/lib/nodeconfd"
	origRel   = stateRel + "/orig"
	noOrigRel = stateRel + "/noorig"
	restRel   = stateRel + "/restored"
	txnRel    = stateRel + "/txn"
)

// FS is the node's filesystem seen through its root mount. Its methods are
// safe for concurrent use; mutating operations run one at a time.
type FS struct {
	mount string
	root  *os.Root
	// mu serializes mutating operations, which share temp file names and
	// bookkeeping.
	mu sync.Mutex
	// readOnly refuses every change (OpenReadOnly).
	readOnly bool
	// Fault, when set, is the test-only fault-point hook (package
	// daemon/faultpoint), told of journal appends and file writes. It is
	// set once, before the first operation.
	Fault func(point string)
}

// Open opens the node's filesystem mounted at rootMount (e.g. "/rootfs", or
// "/" when the daemon runs on the host) and creates the state directory
// /var/lib/nodeconfd (0700) if needed.
func Open(rootMount string) (*FS, error) {
	root, err := os.OpenRoot(rootMount)
	if err != nil {
		return nil, fmt.Errorf("opening node root %s: %w", rootMount, err)
	}
	f := &FS{mount: rootMount, root: root}
	b := f.newBatch()
	defer b.close()
	if err := b.mkdirAll(stateRel); err != nil {
		root.Close()
		return nil, fmt.Errorf("creating state dir: %w", err)
	}
	if err := chmodDir(root, stateRel, 0o700); err != nil {
		root.Close()
		return nil, fmt.Errorf("creating state dir: %w", err)
	}
	return f, nil
}

// Close releases the root mount.
func (f *FS) Close() error {
	return f.root.Close()
}

// Abs returns the host path of a node path (rootMount + path), for watchers.
func (f *FS) Abs(p string) string {
	return filepath.Join(f.mount, p)
}

// rel checks that p is a clean absolute node path outside the daemon's state
// directory and returns it relative to the root.
func rel(p string) (string, error) {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("invalid path %q: want a clean absolute file path", p)
	}
	r := p[1:]
	if r == stateRel || strings.HasPrefix(r, stateRel+"/") {
		return "", fmt.Errorf("invalid path %s: inside the daemon's state directory", p)
	}
	return r, nil
}

// validName reports whether s is usable as one path element.
func validName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}

// WriteState atomically writes the state file /var/lib/nodeconfd/<name> (0600).
func (f *FS) WriteState(name string, data []byte) error {
	if err := checkStateName(name); err != nil {
		return err
	}
	if err := f.writable("writing state " + name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.newBatch()
	defer b.close()
	s := snapshot{Kind: kindFile, Data: data, Mode: 0o600}
	if err := b.put(stateRel+"/"+name, s); err != nil {
		return fmt.Errorf("writing state %s: %w", name, err)
	}
	if err := b.sync(); err != nil {
		return fmt.Errorf("writing state %s: %w", name, err)
	}
	return nil
}

// ReadState returns the state file /var/lib/nodeconfd/<name>; the error
// wraps fs.ErrNotExist when it is missing.
func (f *FS) ReadState(name string) ([]byte, error) {
	if err := checkStateName(name); err != nil {
		return nil, err
	}
	data, err := f.root.ReadFile(stateRel + "/" + name)
	if err != nil {
		return nil, fmt.Errorf("reading state %s: %w", name, err)
	}
	return data, nil
}

func checkStateName(name string) error {
	switch {
	case !validName(name), strings.HasPrefix(name, "."):
		return fmt.Errorf("invalid state name %q", name)
	case name == "orig", name == "noorig", name == "restored", name == "txn":
		return fmt.Errorf("invalid state name %q: reserved", name)
	}
	return nil
}

// isNotExist reports whether err says a file is missing.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist)
}
