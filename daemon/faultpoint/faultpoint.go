// Package faultpoint is a test-only hook for the fault-point tests
// (test/e2e/faults_test.go): it lets a test SIGKILL the daemon at a named
// point of an update, to prove that a crash there converges.
//
// NODECONFD_TEST_KILL_AT=<point>[:n] makes the daemon kill itself with
// SIGKILL the n-th time (default: the first) it reaches <point>. It is never
// set in production: the hook is then nil, and each point costs one nil
// check and nothing else. The points, where they are reached:
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
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// EnvVar names the environment variable that arms the hook.
const EnvVar = "NODECONFD_TEST_KILL_AT"

// Func is the hook: it is called with each point's name as it is reached,
// possibly from several goroutines at once. The daemon's parts take it as a
// plain func(point string) field, nil for none, which they check before
// building the point's name.
type Func func(point string)

// FromEnv returns the hook NODECONFD_TEST_KILL_AT asks for, nil when it is
// unset, or an error when it is malformed.
func FromEnv() (Func, error) {
	spec := os.Getenv(EnvVar)
	if spec == "" {
		return nil, nil
	}
	point, n, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	var seen atomic.Int64
	return func(p string) {
		if p != point || seen.Add(1) != int64(n) {
			return
		}
		fmt.Fprintf(os.Stderr, "nodeconfd: %s=%s: killing the daemon at %s (hit %d)\n", EnvVar, spec, p, n)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way: never go on past the point
	}, nil
}

// Parse splits "<point>[:n]" into the point and its hit count (1 when not
// given). A last ":" element is the count only when it is a number.
func Parse(spec string) (string, int, error) {
	point, count := spec, 1
	if i := strings.LastIndexByte(spec, ':'); i >= 0 {
		if c, err := strconv.Atoi(spec[i+1:]); err == nil {
			point, count = spec[:i], c
		}
	}
	if point == "" || count < 1 {
		return "", 0, fmt.Errorf("%s=%q: want <point>[:n] with n >= 1", EnvVar, spec)
	}
	return point, count, nil
}
