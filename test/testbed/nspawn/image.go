package nspawn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Image builds (first time only; later calls hit the cache) the node root
// filesystem with hack/node-image.sh and returns its folder. The script is
// found by walking up from the working directory to the module's go.mod.
func Image(ctx context.Context) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "hack", "node-image.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("running %s: %w\n%s", script, err, lastLines(stderr.String(), 30))
	}
	dir := strings.TrimSpace(string(out))
	if lines := strings.Split(dir, "\n"); len(lines) > 1 {
		dir = lines[len(lines)-1]
	}
	return dir, nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
