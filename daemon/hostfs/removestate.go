package hostfs

import "fmt"

// RemoveState removes the state file /var/lib/nodeconfd/<name>, durably; a
// missing file is no error.
func (f *FS) RemoveState(name string) error {
	if err := checkStateName(name); err != nil {
		return err
	}
	if err := f.writable("removing state " + name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.root.Remove(stateRel + "/" + name); err != nil && !isNotExist(err) {
		return fmt.Errorf("removing state %s: %w", name, err)
	}
	if err := syncDir(f.root, stateRel); err != nil && !isNotExist(err) {
		return fmt.Errorf("removing state %s: %w", name, err)
	}
	return nil
}
