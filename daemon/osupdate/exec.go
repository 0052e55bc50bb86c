package osupdate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"
)

// Runner runs the node's OS tools.
type Runner interface {
	// Run runs the named program with args and returns its standard output.
	// A failure's error carries the command line and its standard error.
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
	// Has reports whether the named program is installed.
	Has(name string) bool
}

// Chroot runs programs chrooted into the node's root mount, as the node
// itself would run them. The daemon runs as root.
type Chroot struct {
	Root string
	// Timeout bounds each command (0: DefaultTimeout).
	Timeout time.Duration
	// WaitDelay bounds the wait for a command's output once it exited or
	// was killed (0: DefaultWaitDelay).
	WaitDelay time.Duration
	// Cgroup runs each command in a cgroup v2 of its own (cgroup.go), so
	// that what it starts dies with it even after a setsid, at the timeout
	// or when it ends. Where the daemon cannot make one (no cgroup v2, or
	// it is read-only), the process group alone holds the command.
	Cgroup bool
}

// DefaultTimeout bounds one rpm-ostree or bootc command (a pull of a large
// image included).
const DefaultTimeout = 20 * time.Minute

// binPath is where Has looks for programs, as a root's PATH would.
const binPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// stderrMax bounds how much of a command's standard error an error carries.
const stderrMax = 512

// Run runs the program inside the root with a clean environment.
func (c Chroot) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	prog, err := c.find(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + binPath, "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: c.Root}
	inGroup(cmd, c.WaitDelay)
	if c.Cgroup {
		if cg, err := newCmdCgroup(); err == nil {
			cg.start(cmd)
			cmd.Cancel = func() error { _ = cg.kill(); return killGroup(cmd) }
			defer cg.remove() // kills what is left once Run returns
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	killed := ctx.Err() != nil
	if err != nil && (killed || errors.Is(err, exec.ErrWaitDelay)) {
		_ = killGroup(cmd) // what is left of the group: it held the output past WaitDelay
	}
	switch {
	case err == nil:
	case parent.Err() != nil:
		err = parent.Err() // the caller gave up, not the program
	case killed:
		err = &timeoutError{timeout}
	case errors.Is(err, exec.ErrWaitDelay):
		err = fmt.Errorf("a process it started still held its output %s after it exited; killed", cmd.WaitDelay)
	}
	if err != nil {
		ce := &CommandError{Command: commandLine(name, args), Err: err, Stderr: stderr.String()}
		if killed && name == NameRpmOstree && transaction(args) {
			ce.Cleanup = c.cancelTransaction(parent)
		}
		return stdout.Bytes(), ce
	}
	return stdout.Bytes(), nil
}

// find returns the program's path inside the root: a name with a slash
// as it is (the chroot resolves it), a bare name on binPath.
func (c Chroot) find(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	root, err := os.OpenRoot(c.Root)
	if err != nil {
		return "", fmt.Errorf("opening the root mount %s: %w", c.Root, err)
	}
	defer root.Close()
	for _, dir := range strings.Split(binPath, ":") {
		p := path.Join(dir, name)
		// Lstat: a link may be absolute, which os.Root does not follow.
		if fi, err := root.Lstat(strings.TrimPrefix(p, "/")); err == nil && (fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not installed on the node: %w", name, fs.ErrNotExist)
}

// Has reports whether the program is installed in the root.
func (c Chroot) Has(name string) bool {
	_, err := c.find(name)
	return err == nil
}

// CommandError is a failed command with what it printed on stderr.
type CommandError struct {
	Command string
	Err     error
	Stderr  string
	// Cleanup says what was done after the command was killed (the
	// rpm-ostree transaction cancelled), "" when nothing was.
	Cleanup string
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("running %s: %v", e.Command, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + cut(Printable(s), stderrMax)
	}
	if e.Cleanup != "" {
		msg += "; " + e.Cleanup
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// timeoutError is a command killed at its timeout.
type timeoutError struct{ after time.Duration }

func (e *timeoutError) Error() string { return "timed out after " + e.after.String() }

// retryable reports whether a failed command is worth running again: it
// ran and failed, rather than timing out or being cancelled.
func retryable(err error) bool {
	var ce *CommandError
	var te *timeoutError
	return errors.As(err, &ce) && !errors.As(err, &te) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// ExitCode is the command's exit code, or -1.
func (e *CommandError) ExitCode() int {
	var ee *exec.ExitError
	if errors.As(e.Err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func commandLine(name string, args []string) string {
	return strings.Join(append([]string{name}, args...), " ")
}

// Retry bounds the retries of a failed pull: Attempts tries in all, waiting
// Initial, then twice as long each time, at most Max. A command that timed
// out or was cancelled is not retried. Log, when set, gets a line for each
// failed attempt.
type Retry struct {
	Attempts     int
	Initial, Max time.Duration
	Log          *zap.Logger
	// Retried, when set, is told of each retry of a pull, with the tool.
	Retried func(tool string)
}

// DefaultRetry is the pull retry of a real node.
func DefaultRetry() Retry {
	return Retry{Attempts: 5, Initial: 5 * time.Second, Max: time.Minute}
}

// pull runs tool with args to fetch and stage image, retried as r says,
// and notes it in msg.
func (r Retry) pull(ctx context.Context, run Runner, tool, image string, args []string, msg *stageMessage) error {
	tries := 0
	err := r.do(ctx, "pulling OS image "+image, func() error {
		if tries++; tries > 1 && r.Retried != nil {
			r.Retried(tool)
		}
		_, err := run.Run(ctx, tool, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("pulling OS image %s: %w", image, err)
	}
	msg.staged("OS image " + image)
	return nil
}

// do runs f until it succeeds, fails in a way not worth retrying, the
// attempts are used up or ctx ends; it returns the last error, saying how
// many attempts failed.
func (r Retry) do(ctx context.Context, what string, f func() error) error {
	attempts := max(r.Attempts, 1)
	delay := r.Initial
	var err error
	for i := 1; ; i++ {
		if err = f(); err == nil {
			return nil
		}
		last := i >= attempts || !retryable(err)
		if r.Log != nil {
			r.Log.Warn("OS command failed", zap.String("doing", what), zap.Int("attempt", i), zap.Int("attempts", attempts),
				zap.Bool("retrying", !last), zap.Duration("wait", delay), zap.Error(err))
		}
		if last {
			if i > 1 {
				return fmt.Errorf("%w (failed %d times)", err, i)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up after %d attempts: %v)", err, i, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, r.Max)
	}
}

// Printable returns a command's output for a message, a log line or the
// status: invalid UTF-8, control characters (C0, DEL, C1: escape sequences
// would redraw a terminal) and Unicode's bidirectional controls (which make
// text print as something else) become spaces, and every run of spaces one.
func Printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, " "))
	return strings.Join(strings.Fields(s), " ")
}
