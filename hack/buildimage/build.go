package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// goBuildArgs are the `go build` arguments of the image's binary; the
// Dockerfile's build stage runs the same ones (a test holds them together).
// -trimpath and -buildid= keep the build machine's paths and build IDs out;
// -buildvcs=false makes the binary the same with or without .git (the commit
// is in the manifest's annotations instead); -s drops the symbol table and
// DWARF. version is the release `nodeconfd version` reports.
func goBuildArgs(version, out string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -buildid= -X main.version=" + version, "-o", out, "./cmd/nodeconfd"}
}

// buildBinary builds the static daemon for linux/arch at out and returns it.
// GOFLAGS is cleared so that the environment adds nothing (-race, tags).
func buildBinary(ctx context.Context, root, out, version, arch string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", goBuildArgs(version, out)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building the binary: %w", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	return b, nil
}

// result is what one build made.
type result struct {
	Ref          string
	Digest       v1.Hash // the manifest's
	Compressed   int64   // the layer as stored and pulled (gzip)
	Uncompressed int64   // the layer's tar
}

// build makes the image from s and writes it, named ref, to the archive out.
func build(s spec, ref, out string) (result, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return result{}, fmt.Errorf("parsing the image name %q: %w", ref, err)
	}
	img, err := newImage(s)
	if err != nil {
		return result{}, err
	}
	if err := writeArchive(out, img, tag, s.Created); err != nil {
		return result{}, err
	}
	res := result{Ref: tag.Name()}
	if res.Digest, err = img.Digest(); err != nil {
		return result{}, fmt.Errorf("reading the image's digest: %w", err)
	}
	if res.Compressed, res.Uncompressed, err = layerSizes(img); err != nil {
		return result{}, err
	}
	return res, nil
}

// layerSizes sums img's layers as stored (gzip) and as unpacked.
func layerSizes(img v1.Image) (compressed, uncompressed int64, err error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, 0, fmt.Errorf("reading the image's layers: %w", err)
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return 0, 0, fmt.Errorf("reading a layer's size: %w", err)
		}
		compressed += n
		rc, err := l.Uncompressed()
		if err != nil {
			return 0, 0, fmt.Errorf("reading a layer: %w", err)
		}
		n, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return 0, 0, fmt.Errorf("reading a layer: %w", err)
		}
		uncompressed += n
	}
	return compressed, uncompressed, nil
}

// repoRoot is the directory of the module's go.mod.
func repoRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("finding the repository (go env GOMOD: %q): run inside it: %v", gomod, err)
	}
	return filepath.Dir(gomod), nil
}

// sourceDate is SOURCE_DATE_EPOCH (reproducible-builds.org), else the time
// of the commit checked out.
func sourceDate(ctx context.Context, root string) (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		out, err := git(ctx, root, "log", "-1", "--format=%ct")
		if err != nil {
			return time.Time{}, fmt.Errorf("reading the commit's time (or set SOURCE_DATE_EPOCH): %w", err)
		}
		v = out
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: not seconds since 1970", v)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// revision is the commit checked out, "" outside a git checkout.
func revision(ctx context.Context, root string) string {
	out, err := git(ctx, root, "rev-parse", "HEAD")
	if err != nil {
		return ""
	}
	return out
}

func git(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
