// Package images builds the container images the test bed's real nodes
// run, without a container engine, and pushes them to the bed's registry:
// the sandbox ("pause") image and a workload image, both the idle command of
// this package, and the daemon's release image (hack/buildimage -push, the
// image index of `make push`). The nodes pull them by reference; nothing is
// imported into a node.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The repositories of the images in the bed's registry, and their tags;
// the daemon's is the release's repository path with VERSION as its tag.
const (
	pauseRepo    = "testbed/pause:1"
	workloadRepo = "testbed/idle:1"
	daemonRepo   = "nodeconfd/nodeconfd"
)

// Set is one build's images, each a reference in the bed's registry.
type Set struct {
	Pause, Workload string
	// DaemonRef is the daemon image's reference (by tag), the one the
	// release the bed applies runs; DaemonDigest the digest of the image
	// index pushed under it.
	DaemonRef, DaemonDigest string
}

// Build builds the three images in dir and pushes them to the registry at
// host (host:port, plain HTTP). repo is the repository's root, whose daemon
// it builds.
func Build(ctx context.Context, repo, dir, host string) (Set, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Set{}, fmt.Errorf("creating %s: %w", dir, err)
	}
	idle := filepath.Join(dir, "idle")
	if err := goBuild(ctx, repo, idle, "./test/testbed/images/idle"); err != nil {
		return Set{}, err
	}
	s := Set{Pause: host + "/" + pauseRepo, Workload: host + "/" + workloadRepo}
	if err := single(ctx, idle, "/pause", s.Pause); err != nil {
		return Set{}, err
	}
	if err := single(ctx, idle, "/idle", s.Workload); err != nil {
		return Set{}, err
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/buildimage", "-out", filepath.Join(dir, "nodeconfd.tar"),
		"-repo", host+"/"+daemonRepo, "-push")
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Set{}, fmt.Errorf("building and pushing the daemon's image: %w\n%s", err, stderr.Bytes())
	}
	// "pushed:  10.250.7.1:5000/nodeconfd/nodeconfd:v0.1.0@sha256:..."
	for line := range strings.SplitSeq(string(out), "\n") {
		if ref, ok := strings.CutPrefix(line, "pushed:"); ok {
			s.DaemonRef, s.DaemonDigest, _ = strings.Cut(strings.TrimSpace(ref), "@")
		}
	}
	if s.DaemonRef == "" || s.DaemonDigest == "" {
		return Set{}, fmt.Errorf("building the daemon's image: hack/buildimage named no pushed image:\n%s", out)
	}
	return s, nil
}

func goBuild(ctx context.Context, repo, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s", "-o", out, pkg)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// single pushes an image of one file, the static binary bin at path in the
// image, which is also its entrypoint, as ref.
func single(ctx context.Context, bin, path, ref string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("reading %s: %w", bin, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: strings.TrimPrefix(path, "/"), Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return push(ctx, buf.Bytes(), path, ref)
}

// push pushes an image of one layer (a tar), run as entrypoint, as ref.
func push(ctx context.Context, layerTar []byte, entrypoint, ref string) error {
	layer, err := tarball.LayerFromReader(bytes.NewReader(layerTar))
	if err != nil {
		return fmt.Errorf("making the layer of %s: %w", ref, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("making image %s: %w", ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading the configuration of image %s: %w", ref, err)
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = runtime.GOARCH, "linux"
	cfg.Config.Entrypoint = []string{entrypoint}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return fmt.Errorf("configuring image %s: %w", ref, err)
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", ref, err)
	}
	if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing image %s: %w", ref, err)
	}
	return nil
}
