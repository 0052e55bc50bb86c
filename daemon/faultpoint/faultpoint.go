// Package faultpoint is a test-only hook for the fault-point tests
// (test/e2e/faults_test.go, test/cluster): it lets a test SIGKILL the daemon
// at a named point of an update, to prove that a crash there converges, or
// hold the daemon at a point until its SIGTERM comes, to prove that a
// SIGTERM inside a step converges.
//
// NODECONFD_TEST_KILL_AT=<point>[:n] makes the daemon kill itself with
// SIGKILL the n-th time (default: the first) it reaches <point>.
// NODECONFD_TEST_PAUSE_AT=<point>[:n] makes it, the n-th time it reaches
// <point>, say so on stderr and wait there until it receives SIGTERM (or
// SIGINT), then go on as if it had not waited: the signal lands inside
// the step that point is in. At most one of the two may be set.
//
// Neither is ever set in production: the hook is then nil, and each point
// costs one nil check and nothing else. The points, where they are reached:
//
//	start:<phase>   before the phase's Run (after its Wait)
//	ran:<phase>     right after its Run returned, before its progress record
//	                is saved (ran:write is between the write and its record,
//	                ran:reboot right after the reboot request)
//	done:<phase>    after its progress record is saved
//	drain-evicted   after each eviction the drain saw through
//	journal-append  half-way through an undo journal append (a torn entry)
//	journal-synced  in a batch write, once the journal and the originals are
//	                durable, before the first file is renamed into place
//	file-written    after each file of a batch write is renamed into place
package faultpoint

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// EnvVar names the environment variable that arms the kill.
const EnvVar = "NODECONFD_TEST_KILL_AT"

// PauseEnvVar names the environment variable that arms the pause.
const PauseEnvVar = "NODECONFD_TEST_PAUSE_AT"

// Func is the hook: it is called with each point's name as it is reached,
// possibly from several goroutines at once. The daemon's parts take it as a
// plain func(point string) field, nil for none, which they check before
// building the point's name.
type Func func(point string)

// FromEnv returns the hook NODECONFD_TEST_KILL_AT or NODECONFD_TEST_PAUSE_AT
// asks for, nil when neither is set, or an error when the one set is
// malformed or both are.
func FromEnv() (Func, error) {
	kill, pause := os.Getenv(EnvVar), os.Getenv(PauseEnvVar)
	switch {
	case kill != "" && pause != "":
		return nil, fmt.Errorf("%s and %s are both set: arm one fault point at a time", EnvVar, PauseEnvVar)
	case kill != "":
		point, n, err := parse(EnvVar, kill)
		if err != nil {
			return nil, err
		}
		return at(point, n, func(p string) {
			fmt.Fprintf(os.Stderr, "nodeconfd: %s=%s: killing the daemon at %s (hit %d)\n", EnvVar, kill, p, n)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way: never go on past the point
		}), nil
	case pause != "":
		point, n, err := parse(PauseEnvVar, pause)
		if err != nil {
			return nil, err
		}
		return at(point, n, func(p string) { waitForTerm(pause, p, n) }), nil
	}
	return nil, nil
}

// at returns the hook that calls act the n-th time point is reached; every
// other call goes on at once.
func at(point string, n int, act func(p string)) Func {
	var seen atomic.Int64
	return func(p string) {
		if p != point || seen.Add(1) != int64(n) {
			return
		}
		act(p)
	}
}

// waitForTerm holds the calling goroutine until the process receives
// SIGTERM or SIGINT. The daemon's own handler gets the signal too (every
// channel registered for a signal receives it), so the daemon learns of its
// shutdown as it would have without the pause. The message is printed only
// once the handler is in place: a test that waits for it and then signals
// cannot kill the process by the default action.
func waitForTerm(spec, p string, n int) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(term)
	fmt.Fprintf(os.Stderr, "nodeconfd: %s=%s: pausing at %s (hit %d) until SIGTERM\n", PauseEnvVar, spec, p, n)
	name := "SIGTERM"
	if <-term == syscall.SIGINT {
		name = "SIGINT"
	}
	fmt.Fprintf(os.Stderr, "nodeconfd: %s=%s: %s received; going on from %s\n", PauseEnvVar, spec, name, p)
}

// Parse splits "<point>[:n]" into the point and its hit count (1 when not
// given). A last ":" element is the count only when it is a number.
func Parse(spec string) (string, int, error) {
	return parse(EnvVar, spec)
}

func parse(name, spec string) (string, int, error) {
	point, count := spec, 1
	if i := strings.LastIndexByte(spec, ':'); i >= 0 {
		if c, err := strconv.Atoi(spec[i+1:]); err == nil {
			point, count = spec[:i], c
		}
	}
	if point == "" || count < 1 {
		return "", 0, fmt.Errorf("%s=%q: want <point>[:n] with n >= 1", name, spec)
	}
	return point, count, nil
}
