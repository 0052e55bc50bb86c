package osfake

import (
	"fmt"
	"io"
	"path/filepath"
)

// Main runs the fake as the tool argv[0] names (rpm-ostree, bootc, or the
// fake itself for `boot`) against the node root root ("/" in the node) and
// returns the exit code.
func Main(root string, argv []string, stdout, stderr io.Writer) int {
	f := &fake{root: root, stdout: stdout, stderr: stderr}
	name := filepath.Base(argv[0])
	args := argv[1:]
	if name != filepath.Base(Binary) {
		f.logInvocation(append([]string{name}, args...))
	}
	var err error
	switch name {
	case "rpm-ostree":
		err = f.rpmOstree(args)
	case "bootc":
		err = f.bootc(args)
	default:
		switch {
		case len(args) == 1 && args[0] == "boot":
			err = f.boot()
		case len(args) == 1 && args[0] == "hold":
			err = hold()
		default:
			err = fmt.Errorf("usage: %s boot (or call it as rpm-ostree or bootc)", name)
		}
	}
	if err == nil {
		return 0
	}
	if e, ok := err.(exitError); ok {
		if e.msg != "" {
			fmt.Fprintln(stderr, e.msg)
		}
		return e.code
	}
	fmt.Fprintln(stderr, "error: "+err.Error())
	return 1
}

// exitError ends the program with a given code and message.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }
