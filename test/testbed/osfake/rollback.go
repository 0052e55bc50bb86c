package osfake

import (
	"errors"
	"fmt"
)

// rpmRollback is `rpm-ostree rollback`: the rollback deployment (the one
// after the booted one) moves first, so the next boot brings it up; with a
// pending deployment and no rollback one, the booted one moves first again
// (undoing the pending one), as rpm-ostree does. A staged deployment is
// dropped (it was never finalized). Running it twice swaps back.
func (f *fake) rpmRollback(args []string) error {
	fl, err := parseFlags(args, []string{"reboot"}, []string{"os"}, map[string]string{"r": "reboot"})
	if err != nil {
		return err
	}
	if fl.has("reboot") {
		return fmt.Errorf("this fake does not implement rollback --reboot")
	}
	f.dropStaged()
	target := f.state.Booted + 1
	if target >= len(f.state.Deployments) {
		if f.state.Booted == 0 {
			return errors.New("No rollback deployment found")
		}
		target = f.state.Booted
	}
	d := f.state.Deployments[target]
	f.moveFirst(target)
	if err := f.save(); err != nil {
		return err
	}
	fmt.Fprintf(f.stdout, "Moving '%s.%d' to be first deployment\nTransaction complete; bootconfig swap: yes; deployment count change: 0\n",
		d.Checksum, d.Serial)
	fmt.Fprintln(f.stdout, "Run \"systemctl reboot\" to start a reboot")
	return nil
}

// bootcRollback is `bootc rollback`: a staged entry is discarded, and the
// rollback entry is queued for the next boot (the booted one becomes the
// rollback); with the rollback entry queued already, the order is swapped
// back, as bootc does.
func (f *fake) bootcRollback(args []string) error {
	fl, err := parseFlags(args, []string{"apply", "soft-reboot"}, nil, nil)
	if err != nil {
		return exitError{2, "error: " + err.Error()}
	}
	if fl.has("apply") || fl.has("soft-reboot") {
		return fmt.Errorf("this fake does not implement rollback --apply")
	}
	f.dropStaged()
	target := -1
	for i := range f.state.Deployments {
		if i != f.state.Booted {
			target = i
			break
		}
	}
	if target < 0 {
		return errors.New("No rollback available")
	}
	if target < f.state.Booted {
		target = f.state.Booted // queued already: back to the booted entry
	}
	f.moveFirst(target)
	if err := f.save(); err != nil {
		return err
	}
	if f.state.Booted == 0 {
		fmt.Fprintln(f.stdout, "Next boot: current deployment")
	} else {
		fmt.Fprintln(f.stdout, "Next boot: rollback deployment")
	}
	return nil
}

// dropStaged removes a staged deployment.
func (f *fake) dropStaged() {
	if len(f.state.Deployments) > 0 && f.state.Deployments[0].Staged {
		f.state.Deployments = f.state.Deployments[1:]
		f.state.Booted--
	}
}

// moveFirst moves deployment i first, keeping the others' order.
func (f *fake) moveFirst(i int) {
	deps := f.state.Deployments
	d := deps[i]
	rest := append(append([]Deployment{}, deps[:i]...), deps[i+1:]...)
	f.state.Deployments = append([]Deployment{d}, rest...)
	switch {
	case i == f.state.Booted:
		f.state.Booted = 0
	case i > f.state.Booted:
		f.state.Booted++
	}
}
