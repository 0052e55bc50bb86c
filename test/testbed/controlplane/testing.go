package controlplane

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// MustKubectl runs the control plane's kubectl as admin and returns its
// stdout; a failure ends the test with kubectl's output.
func (c *ControlPlane) MustKubectl(t testing.TB, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(c.KubectlPath(), append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestLog is an Options.Log that writes each line to the test's log.
type TestLog struct{ T testing.TB }

func (l TestLog) Write(b []byte) (int, error) {
	l.T.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}
