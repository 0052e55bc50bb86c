package hostfs

import (
	"errors"
	"fmt"
	"os"
)

// ErrReadOnly is the error of every change through an FS opened with
// OpenReadOnly.
var ErrReadOnly = errors.New("the node's root is open read-only")

// OpenReadOnly opens the node's filesystem at rootMount for reading only:
// the state folder is not created, and every method that would change the
// node fails with ErrReadOnly. `nodeconfd plan --root-mount` reads the node
// through it, so a preview never writes.
func OpenReadOnly(rootMount string) (*FS, error) {
	root, err := os.OpenRoot(rootMount)
	if err != nil {
		return nil, fmt.Errorf("opening node root %s: %w", rootMount, err)
	}
	return &FS{mount: rootMount, root: root, readOnly: true}, nil
}

// writable refuses a change through a read-only FS.
func (f *FS) writable(what string) error {
	if f.readOnly {
		return fmt.Errorf("%s: %w", what, ErrReadOnly)
	}
	return nil
}
