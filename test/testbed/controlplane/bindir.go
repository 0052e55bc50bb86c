package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// resolveBinDir returns binDir if set, else builds (or finds cached) binaries with
// hack/build-controlplane.sh and returns the folder it prints.
func resolveBinDir(ctx context.Context, binDir string, log io.Writer) (string, error) {
	if binDir == "" {
		dir, err := RunHackScript(ctx, "build-controlplane.sh", log)
		if err != nil {
			return "", err
		}
		binDir = dir
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
		path := filepath.Join(binDir, name)
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("checking control plane binaries: %w", err)
		}
	}
	return binDir, nil
}

// resolveNodeBinDir is resolveBinDir for kube-scheduler and
// kube-controller-manager, from hack/build-nodestack.sh.
func resolveNodeBinDir(ctx context.Context, binDir string, log io.Writer) (string, error) {
	if binDir == "" {
		dir, err := RunHackScript(ctx, "build-nodestack.sh", log)
		if err != nil {
			return "", err
		}
		binDir = dir
	}
	for _, name := range []string{"kube-scheduler", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return "", fmt.Errorf("checking the node stack's binaries: %w", err)
		}
	}
	return binDir, nil
}

// RunHackScript runs hack/<name> from the repository's root (its stderr to
// log as well) and returns the last line it printed: the set-up scripts
// print the path of what they built or found cached.
func RunHackScript(ctx context.Context, name string, log io.Writer) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "hack", name)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = root
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(&stderr, log)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("running %s: %w\n%s", script, err, lastBytes(stderr.String(), 3000))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// RepoRoot walks up from the working directory to the folder holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
