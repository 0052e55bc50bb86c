// Package images builds the container images the test bed's real nodes
// run, without a container engine and without pulling anything: the
// sandbox ("pause") image and a workload image, both the idle command of
// this package, and the daemon's release image (hack/buildimage). Each is an
// archive that `ctr -n k8s.io images import` reads.
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
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The images' references. Nothing resolves the registry's name: the images
// are imported, and pods name them with imagePullPolicy IfNotPresent. The
// daemon's image is the release image (`make image`), named as the
// DaemonSet names it.
const (
	Pause    = "testbed.local/pause:1"
	Workload = "testbed.local/idle:1"
)

// Set is one build's archives, each the path of an image archive.
type Set struct {
	Pause, Workload, Daemon string
	// DaemonRef is the daemon image's reference, as hack/buildimage names it.
	DaemonRef string
}

// Archives lists the set's archives.
func (s Set) Archives() []string { return []string{s.Pause, s.Workload, s.Daemon} }

// Build writes the three image archives into dir. repo is the repository's
// root, whose daemon it builds.
func Build(ctx context.Context, repo, dir string) (Set, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Set{}, fmt.Errorf("creating %s: %w", dir, err)
	}
	idle := filepath.Join(dir, "idle")
	if err := goBuild(ctx, repo, idle, "./test/testbed/images/idle"); err != nil {
		return Set{}, err
	}
	s := Set{Pause: filepath.Join(dir, "pause.tar"), Workload: filepath.Join(dir, "workload.tar"),
		Daemon: filepath.Join(dir, "nodeconfd.tar")}
	if err := single(idle, "/pause", Pause, s.Pause); err != nil {
		return Set{}, err
	}
	if err := single(idle, "/idle", Workload, s.Workload); err != nil {
		return Set{}, err
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/buildimage", "-out", s.Daemon)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Set{}, fmt.Errorf("building the daemon's image: %w\n%s", err, stderr.Bytes())
	}
	// "image:   quay.io/nodeconfd/nodeconfd:v0.1.0"
	for line := range strings.SplitSeq(string(out), "\n") {
		if ref, ok := strings.CutPrefix(line, "image:"); ok {
			s.DaemonRef = strings.TrimSpace(ref)
		}
	}
	if s.DaemonRef == "" {
		return Set{}, fmt.Errorf("building the daemon's image: hack/buildimage named no image:\n%s", out)
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

// single writes an image of one file, the static binary bin at path in the
// image, which is also its entrypoint, named ref, to the archive out.
func single(bin, path, ref, out string) error {
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
	layer, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()))
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
	cfg.Config.Entrypoint = []string{path}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return fmt.Errorf("configuring image %s: %w", ref, err)
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", ref, err)
	}
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		return fmt.Errorf("writing image %s to %s: %w", ref, out, err)
	}
	return nil
}
