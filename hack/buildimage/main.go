// Command buildimage builds nodeconfd's release image without a container
// engine: the image the Dockerfile describes (FROM scratch, /etc/passwd and
// /etc/group from hack/buildimage/rootfs, the static binary at
// /usr/bin/nodeconfd, its entrypoint and arguments), for linux/amd64 and
// linux/arm64 in one image index, written as an OCI image layout tar and,
// with -push, pushed to the registry the repository names (go-containerregistry).
// The build is reproducible: one commit gives one digest (docs/image.md).
//
// Usage, from anywhere in the repository (`make image` runs it):
//
//	go run ./hack/buildimage [-out bin/nodeconfd-image.tar] [-repo quay.io/nodeconfd/nodeconfd] [-version v0.1.0]
//	    [-arch amd64,arm64] [-push]
//
// Every timestamp is SOURCE_DATE_EPOCH, else the commit's time.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// defaultRepo is the repository the DaemonSet (manifests/03-daemonset.yaml)
// runs the image from; the tag is the VERSION file.
const defaultRepo = "quay.io/nodeconfd/nodeconfd"

func main() {
	out := flag.String("out", "bin/nodeconfd-image.tar", "the archive to write (relative to the repository root)")
	repo := flag.String("repo", defaultRepo, "the image's repository; the tag is -version")
	version := flag.String("version", "", "the release (default: the VERSION file)")
	arches := flag.String("arch", "amd64,arm64", "the architectures to build for, separated by commas: one image index")
	pushIt := flag.Bool("push", false, "push the image to -repo's registry as well (credentials: docker login's)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, options{out: *out, repo: *repo, version: *version, arches: *arches, push: *pushIt}); err != nil {
		fmt.Fprintln(os.Stderr, "buildimage:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	out, repo, version, arches string
	push                       bool
}

func run(ctx context.Context, o options) error {
	arches, err := parseArches(o.arches)
	if err != nil {
		return err
	}
	root, err := repoRoot(ctx)
	if err != nil {
		return err
	}
	version, out := o.version, o.out
	if version == "" {
		b, err := os.ReadFile(filepath.Join(root, "VERSION"))
		if err != nil {
			return fmt.Errorf("reading the version: %w", err)
		}
		version = strings.TrimSpace(string(b))
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("making the output directory: %w", err)
	}
	created, err := sourceDate(ctx, root)
	if err != nil {
		return err
	}
	binDir, err := os.MkdirTemp(filepath.Dir(out), ".buildimage-bin-")
	if err != nil {
		return fmt.Errorf("making a build directory: %w", err)
	}
	defer os.RemoveAll(binDir)
	rev := revision(ctx, root)
	var specs []spec
	for _, arch := range arches {
		binary, err := buildBinary(ctx, root, filepath.Join(binDir, "nodeconfd-"+arch), version, arch)
		if err != nil {
			return err
		}
		specs = append(specs, spec{Binary: binary, Arch: arch, Created: created, Version: version, Revision: rev})
	}
	idx, res, err := buildIndex(specs, o.repo+":"+version, out)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, out)
	if err != nil {
		rel = out
	}
	fmt.Printf("image:   %s\ndigest:  %s\nplatforms: linux/%s\narchive: %s (OCI layout tar)\n",
		res.Ref, res.Digest, strings.Join(arches, ", linux/"), rel)
	fmt.Printf("size:    %.1f MB compressed, %.1f MB uncompressed (all platforms)\n", mb(res.Compressed), mb(res.Uncompressed))
	if !o.push {
		return nil
	}
	if err := push(ctx, idx, res.Ref); err != nil {
		return err
	}
	fmt.Printf("pushed:  %s@%s\n", res.Ref, res.Digest)
	return nil
}

func mb(n int64) float64 { return float64(n) / 1e6 }
