// Package osupdate stages OS image and kernel argument changes the way the
// node's own tools do: rpm-ostree on RHCOS and Fedora CoreOS, bootc on
// bootc hosts. The tools run chrooted into the root mount, with a timeout;
// a failed pull is retried with capped backoff. Command lines are built by
// pure functions (commands.go) and the tools' --json output is parsed with
// their own field names (status.go).
package osupdate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nodeconfd/nodeconfd/phases"
)

// Updater names.
const (
	NameRpmOstree = "rpm-ostree"
	NameBootc     = "bootc"
	NameNone      = "none"
)

// Detect finds the node's updater from the root mount: rpm-ostree on an
// ostree-booted host with rpm-ostree installed, bootc when bootc is
// installed and the host booted from an image, else none (nil).
func Detect(ctx context.Context, root string, run Runner, retry Retry) (phases.OSUpdater, error) {
	_, err := os.Stat(filepath.Join(root, "run/ostree-booted"))
	switch {
	case err == nil && run.Has(NameRpmOstree):
		return &RpmOstree{Run: run, Retry: retry}, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("checking %s/run/ostree-booted: %w", root, err)
	}
	if !run.Has(NameBootc) {
		return nil, nil
	}
	host, err := bootcStatus(ctx, run)
	if err != nil {
		return nil, err
	}
	if !host.BootedFromImage() {
		return nil, nil
	}
	return &Bootc{Run: run, Retry: retry}, nil
}

// Name is the updater's name, "none" for nil.
func Name(u phases.OSUpdater) string {
	if u == nil {
		return NameNone
	}
	return u.Name()
}

func bootcStatus(ctx context.Context, run Runner) (BootcHost, error) {
	out, err := run.Run(ctx, NameBootc, "status", "--json")
	if err != nil {
		return BootcHost{}, fmt.Errorf("reading the bootc status: %w", err)
	}
	return ParseBootcStatus(out)
}
