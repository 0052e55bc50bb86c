package osfake

import (
	"errors"
	"io/fs"
	"os"
)

// boot runs at every boot of the node, before the daemon starts: it
// finalizes a staged deployment (keeping it and the one booted before it;
// older ones go), then boots the bootloader's default entry, the first
// deployment; or, when this boot finalized a staged deployment and
// FallbackFile is there, the next one, as a bootloader falling back would
// (the file is then removed).
func (f *fake) boot() error {
	if err := f.load(); err != nil {
		return err
	}
	finalized := len(f.state.Deployments) > 0 && f.state.Deployments[0].Staged
	if finalized {
		f.state.Deployments[0].Staged = false
		prev := f.state.Deployments[f.state.Booted]
		f.state.Deployments = []Deployment{f.state.Deployments[0], prev}
	}
	f.state.Booted = 0
	if finalized {
		err := os.Remove(f.path(FallbackFile))
		switch {
		case err == nil:
			f.state.Booted = 1
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
	}
	if err := f.save(); err != nil {
		return err
	}
	// As ostree-prepare-root does in the initramfs.
	if err := os.WriteFile(f.path("/run/ostree-booted"), nil, 0o644); err != nil {
		return err
	}
	fh, err := os.OpenFile(f.path(BootsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer fh.Close()
	_, err = fh.WriteString(f.state.Deployments[f.state.Booted].Image + "\n")
	return err
}
