package controlplane

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// How long a process gets to exit after SIGTERM before it is killed. kube-apiserver waits for
// open watches to end when it shuts down gracefully, which clients under test hold open, so
// its grace is short.
const (
	etcdStopGrace      = 10 * time.Second
	apiserverStopGrace = 2 * time.Second
)

// process is one running control plane binary; its output goes to <dir>/<name>.log.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once the process has exited
	err     error         // exit status, valid once done is closed
}

// startProcess starts bin with args at nice value nice; its output is
// appended to <dir>/<name>.log.
func startProcess(dir, name, bin string, nice int, args []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", logPath, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	// Own process group, so Stop can kill helpers too; die with the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	if err := setNice(cmd.Process.Pid, nice); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then kills the process group. It reports whether the
// process had to be killed. Safe to call twice.
func (p *process) stop(grace time.Duration) (killed bool) {
	if p == nil || p.exited() {
		return false
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		killed = true
	}
	// The process if it is still there, and anything else its group left behind.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	return killed
}

// tail returns the last lines of the process log, for error messages.
func (p *process) tail() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	const max = 3000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(data)
}

// exitError describes a process that ended while it should have been running.
func (p *process) exitError() error {
	err := p.err
	if err == nil {
		err = errors.New("exited with status 0")
	}
	return fmt.Errorf("%s exited: %w; log %s ends with:\n%s", p.name, err, p.logPath, p.tail())
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func loopbackURL(scheme string, port int) string {
	return scheme + "://127.0.0.1:" + strconv.Itoa(port)
}
