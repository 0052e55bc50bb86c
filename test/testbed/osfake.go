package testbed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

// osFake builds, once per bed, the static fake of rpm-ostree and bootc.
func (b *Bed) osFake(ctx context.Context) (string, error) {
	b.osFakeOnce.Do(func() {
		bin := filepath.Join(b.Dir, "nodeconfd-osfake")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./test/testbed/osfake/cmd/nodeconfd-osfake")
		cmd.Dir = b.Repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.osFakeErr = fmt.Errorf("building the fake OS tools: %v\n%s", err, out)
			return
		}
		b.osFakeBin = bin
	})
	return b.osFakeBin, b.osFakeErr
}

// OSCalls returns the node's calls of the fake rpm-ostree and bootc, each
// as its command line (arguments joined by spaces).
func (n *Node) OSCalls() ([]string, error) {
	data, err := os.ReadFile(filepath.Join(n.Sys.Root, osfake.InvocationsFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var calls []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var args []string
		if err := json.Unmarshal(sc.Bytes(), &args); err != nil {
			return nil, fmt.Errorf("reading %s: %w", osfake.InvocationsFile, err)
		}
		calls = append(calls, strings.Join(args, " "))
	}
	return calls, nil
}

// OSBoots returns the image each boot of the node booted, in order.
func (n *Node) OSBoots() ([]string, error) {
	data, err := os.ReadFile(filepath.Join(n.Sys.Root, osfake.BootsFile))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(data)), nil
}

// FailOSPulls makes the next count image pulls of the fake tools fail.
func (n *Node) FailOSPulls(count int) error {
	return os.WriteFile(filepath.Join(n.Sys.Root, osfake.FailPullsFile), []byte(fmt.Sprintf("%d\n", count)), 0o644)
}

// FallBackNextOSBoot makes the next boot into a staged deployment boot the
// previous one instead, as a bootloader falling back would.
func (n *Node) FallBackNextOSBoot() error {
	return os.WriteFile(filepath.Join(n.Sys.Root, osfake.FallbackFile), nil, 0o644)
}
