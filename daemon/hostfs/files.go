package hostfs

import (
	"fmt"
	"os"
	"path"
	"sync"
	"sync/atomic"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// target is one file to write, resolved: its path relative to the root and
// the state it must reach.
type target struct {
	path string
	rel  string
	want snapshot
	// pinned marks a target whose folder the caller opened and checked
	// itself (core's SSH folder, which core owns).
	pinned bool
}

// WriteFile atomically writes a file: parent directories are created (0755),
// a temp file in the same directory gets the contents, mode (setuid, setgid
// and sticky bits included) and owner, is fsynced and renamed over the path,
// and the directory is fsynced. Before the first overwrite of a file the
// daemon did not create, the original is saved (see RemoveFile).
func (f *FS) WriteFile(file plan.File) error {
	if err := f.writable("writing " + file.Path); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.newBatch()
	defer b.close()
	if err := b.writeFiles([]plan.File{file}); err != nil {
		return err
	}
	if err := b.sync(); err != nil {
		return fmt.Errorf("writing %s: %w", file.Path, err)
	}
	return nil
}

// RemoveFile undoes the daemon's writes to a path the config no longer has:
// the original is restored (contents, mode, owner) if the daemon saved one,
// else the file is deleted. It is idempotent: once an original is restored,
// removing the path again leaves it alone.
func (f *FS) RemoveFile(p string) error {
	if err := f.writable("removing " + p); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.newBatch()
	defer b.close()
	r, err := rel(p)
	if err != nil {
		return err
	}
	if err := b.removeFile(r); err != nil {
		return fmt.Errorf("removing %s: %w", p, err)
	}
	return nil
}

// targets validates files and resolves their owners.
func (b *batch) targets(files []plan.File) ([]target, error) {
	ts := make([]target, 0, len(files))
	for _, file := range files {
		r, err := rel(file.Path)
		if err != nil {
			return nil, err
		}
		uid, gid, err := b.owner(file.User, file.Group)
		if err != nil {
			return nil, fmt.Errorf("owner of %s: %w", file.Path, err)
		}
		want := snapshot{Kind: kindFile, Data: file.Contents, Mode: rawMode(file.Mode), UID: uid, GID: gid, digest: file.Digest}
		ts = append(ts, target{path: file.Path, rel: r, want: want})
	}
	return ts, nil
}

// writeFiles saves the originals of all files (made durable before any
// write), then writes them. The directories of the written files are left
// in b.dirty.
func (b *batch) writeFiles(files []plan.File) error {
	ts, err := b.targets(files)
	if err != nil {
		return err
	}
	return b.writeTargets(ts)
}

func (b *batch) writeTargets(ts []target) error {
	for _, t := range ts {
		if t.want.digest != nil {
			return fmt.Errorf("writing %s: a digest has no contents to write", t.path)
		}
		check := b.checkWrite // the same checks as Preflight, again
		if t.pinned {
			check = b.checkTarget
		}
		if err := check(t.rel); err != nil {
			return fmt.Errorf("writing %s: %w", t.path, err)
		}
	}
	var kept []string
	for _, t := range ts {
		saved, err := b.keepOriginal(t.rel)
		if err != nil {
			return fmt.Errorf("saving the original of %s: %w", t.path, err)
		}
		if saved {
			kept = append(kept, t.rel)
		}
	}
	if err := b.sync(); err != nil {
		return fmt.Errorf("saving originals: %w", err)
	}
	for _, r := range kept {
		// The file is managed again: a restored marker no longer applies.
		if err := b.remove(restRel + "/" + r); err != nil {
			return fmt.Errorf("saving the original of /%s: %w", r, err)
		}
	}
	return b.putAll(ts)
}

// putWorkers bounds the files written at once. Each write ends with its own
// fsync; run side by side, the fsyncs share the filesystem's journal
// commits instead of waiting for one each.
const putWorkers = 8

// putAll writes every target like put, several at a time. The directories
// are made first, one by one (a new directory syncs its parent). On an
// error no new write starts, and the first error is returned once the
// running ones end; the transaction's journal covers every path.
func (b *batch) putAll(ts []target) error {
	if b.f.Fault != nil && len(ts) > 0 {
		b.f.Fault("journal-synced")
	}
	dirs := make([]*os.Root, len(ts))
	for i, t := range ts {
		d, err := b.dir(path.Dir(t.rel), true)
		if err != nil {
			return fmt.Errorf("writing %s: %w", t.path, err)
		}
		dirs[i] = d
		b.dirty[path.Dir(t.rel)] = true
	}
	var (
		next   atomic.Int64
		failed atomic.Bool
		errs   = make([]error, len(ts))
		wg     sync.WaitGroup
	)
	for range min(putWorkers, len(ts)) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(ts) {
					return
				}
				if err := replace(dirs[i], path.Base(ts[i].rel), ts[i].want); err != nil {
					errs[i] = fmt.Errorf("writing %s: %w", ts[i].path, err)
					failed.Store(true)
				} else if b.f.Fault != nil {
					b.f.Fault("file-written")
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// keepOriginal records, once, what rel was before the daemon first wrote it:
// a copy under orig/, or a marker under noorig/ when there was nothing. It
// reports whether it did; the copy or marker is left in b.dirty for the
// caller to sync.
func (b *batch) keepOriginal(r string) (bool, error) {
	done, err := b.managed(r)
	if err != nil || done {
		return false, err
	}
	cur, err := b.read(r)
	if err != nil {
		return false, err
	}
	if cur.Kind == kindAbsent {
		return true, b.mark(noOrigRel + "/" + r)
	}
	return true, b.put(origRel+"/"+r, cur)
}

// managed reports whether the daemon has written rel: it then holds an
// original backup or a no-original marker.
func (b *batch) managed(r string) (bool, error) {
	if ok, err := b.exists(origRel + "/" + r); ok || err != nil {
		return ok, err
	}
	return b.exists(noOrigRel + "/" + r)
}

// removeFile undoes the daemon's writes to rel. Each branch makes its node
// change durable before it drops bookkeeping, so a re-run after a crash
// takes the same branch or finds the work done:
//   - with an original backup: restore it, then mark rel restored (a
//     repeated removal must not delete the original), then drop the backup;
//   - with a no-original marker: delete rel, then drop the marker;
//   - restored earlier: nothing to do;
//   - never written by the daemon (e.g. by Ignition at first boot): delete.
func (b *batch) removeFile(r string) error {
	orig, err := b.read(origRel + "/" + r)
	if err != nil {
		return err
	}
	if orig.Kind != kindAbsent {
		return b.steps(
			func() error { return b.put(r, orig) },
			func() error { return b.mark(restRel + "/" + r) },
			func() error { return b.remove(origRel + "/" + r) },
		)
	}
	if ok, err := b.exists(noOrigRel + "/" + r); ok || err != nil {
		if err != nil {
			return err
		}
		return b.steps(
			func() error { return b.remove(r) },
			func() error { return b.remove(noOrigRel + "/" + r) },
		)
	}
	if ok, err := b.exists(restRel + "/" + r); ok || err != nil {
		return err
	}
	return b.steps(func() error { return b.remove(r) })
}

// steps runs each step and makes it durable before the next.
func (b *batch) steps(steps ...func() error) error {
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
		if err := b.sync(); err != nil {
			return err
		}
	}
	return nil
}

// parentDirs returns the distinct parent directories of node paths.
func parentDirs(paths []string) []string {
	seen := map[string]bool{}
	var dirs []string
	for _, p := range paths {
		d := path.Dir(p[1:])
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// mark creates the empty marker file rel. It is not fsynced: only its
// directory entry matters, and the caller syncs the directory.
func (b *batch) mark(r string) error {
	d, err := b.dir(path.Dir(r), true)
	if err != nil {
		return err
	}
	fh, err := d.OpenFile(path.Base(r), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	b.dirty[path.Dir(r)] = true
	return fh.Close()
}
