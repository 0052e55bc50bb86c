package hostfs

import (
	"fmt"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Preflight checks, before the update touches anything (no cordon, no
// write), everything about the node that would make the write step fail or
// unsafe: the owners of the files to write against the node's passwd and
// group, the folders of every path to write or remove (see checkParents),
// what is at each path now, two entries reaching one file through the
// node's symlinks, units to enable that have no unit file, and the SSH
// folder of each user whose keys change (see preflightSSH). It only reads.
// A refusal is a *plan.ConfigError naming the desired MachineConfig and the
// field, e.g. spec.config.storage.files[3].user.name; further problems are
// counted in its More.
func (f *FS) Preflight(current, desired plan.Config, diff plan.Diff) error {
	b := f.newBatch()
	defer b.close()
	var errs []*plan.ConfigError
	refuse := func(field string, err error) {
		errs = append(errs, &plan.ConfigError{Object: desired.Name, Field: field, Msg: err.Error()})
	}
	for _, file := range diff.ChangedFiles {
		b.preflightFile(file, refuse)
	}
	for _, p := range diff.RemovedFiles {
		if err := b.preflightRemove(p); err != nil {
			// The desired config has no entry for it: name the list, and
			// the entry of the current config.
			if old, ok := current.Files[p]; ok && old.Field != "" {
				err = fmt.Errorf("%w (it was %s of MachineConfig %q)", err, old.Field, current.Name)
			}
			refuse("spec.config.storage.files", err)
		}
	}
	for _, u := range diff.ChangedUnits {
		b.preflightUnit(u, false, refuse)
		if u.Enabled != nil && *u.Enabled && !u.Mask {
			if err := b.checkEnable(u, desired); err != nil {
				refuse(u.Field+".enabled", err)
			}
		}
	}
	for _, u := range diff.RemovedUnits {
		b.preflightUnit(u, true, refuse)
	}
	for _, k := range diff.SSHKeys {
		if err := b.preflightSSH(k); err != nil {
			refuse(k.Field, err)
		}
	}
	b.sameFiles(desired, refuse)
	b.sshClaims(desired, refuse)
	if len(errs) == 0 {
		return nil
	}
	first := errs[0]
	first.More, first.Others = len(errs)-1, errs[1:]
	return first
}

// preflightFile checks one file to write: its path, then its owner with the
// same resolution the write uses.
func (b *batch) preflightFile(file plan.File, refuse func(string, error)) {
	r, err := rel(file.Path)
	if err == nil {
		err = b.checkWrite(r)
	}
	if err != nil {
		refuse(file.Field+".path", fmt.Errorf("writing %s: %w", file.Path, err))
	}
	for _, o := range []struct {
		owner  plan.Owner
		isUser bool
		field  string
	}{{file.User, true, ".user"}, {file.Group, false, ".group"}} {
		if _, err := b.resolve(o.owner, o.isUser); err != nil {
			sub := ".name"
			if o.owner.ID != nil {
				sub = ".id"
			}
			refuse(file.Field+o.field+sub, err)
		}
	}
}

func (b *batch) preflightRemove(p string) error {
	r, err := rel(p)
	if err != nil {
		return err
	}
	if err := b.checkRemove(r); err != nil {
		return fmt.Errorf("cannot remove %s, which the desired config no longer has: %w", p, err)
	}
	return nil
}

// preflightUnit checks the paths of a unit's file and drop-ins: those to
// write, or, for a removed unit, those to remove.
func (b *batch) preflightUnit(u plan.Unit, removed bool, refuse func(string, error)) {
	files, err := unitFiles(u)
	if err != nil {
		refuse(u.Field+".name", err)
		return
	}
	for _, file := range files {
		field := u.Field + ".contents"
		if file.Path != unitDir+"/"+u.Name {
			field = u.Field + ".dropins"
		}
		if removed {
			if err := b.preflightRemove(file.Path); err != nil {
				refuse(u.Field, fmt.Errorf("unit %s: %w", u.Name, err))
			}
			continue
		}
		r, err := rel(file.Path)
		if err == nil {
			err = b.checkWrite(r)
		}
		if err != nil {
			refuse(field, fmt.Errorf("unit %s: writing %s: %w", u.Name, file.Path, err))
		}
	}
}

// validID reports whether id can be a file's owner (see plan.MaxID).
func validID(id int) bool {
	return id >= 0 && id <= plan.MaxID
}
