// Command buildimage builds nodeconfd's release image without a container
// engine: the image the Dockerfile describes (FROM scratch, /etc/passwd and
// /etc/group from hack/buildimage/rootfs, the static binary at
// /usr/bin/nodeconfd, its entrypoint and arguments), written as an OCI image
// layout tar that `ctr -n k8s.io images import` reads. The build is
// reproducible: one commit gives one digest (docs/image.md).
//
// Usage, from anywhere in the repository (`make image` runs it):
//
//	go run ./hack/buildimage [-out bin/nodeconfd-image.tar] [-repo quay.io/nodeconfd/nodeconfd] [-version v0.1.0]
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
	"runtime"
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
	arch := flag.String("arch", envOr("GOARCH", runtime.GOARCH), "the architecture to build for")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *out, *repo, *version, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "buildimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, repo, version, arch string) error {
	root, err := repoRoot(ctx)
	if err != nil {
		return err
	}
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
	binary, err := buildBinary(ctx, root, filepath.Join(binDir, "nodeconfd"), version, arch)
	if err != nil {
		return err
	}
	s := spec{Binary: binary, Arch: arch, Created: created, Version: version, Revision: revision(ctx, root)}
	res, err := build(s, repo+":"+version, out)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, out)
	if err != nil {
		rel = out
	}
	fmt.Printf("image:   %s\ndigest:  %s\narchive: %s (OCI layout tar)\n", res.Ref, res.Digest, rel)
	fmt.Printf("size:    %.1f MB compressed, %.1f MB uncompressed\n", mb(res.Compressed), mb(res.Uncompressed))
	fmt.Printf("import:  ctr -n k8s.io images import %s\n", rel)
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func mb(n int64) float64 { return float64(n) / 1e6 }
