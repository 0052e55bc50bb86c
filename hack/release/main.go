// Command release writes nodeconfd's release manifest: every manifest of
// manifests/ (the files `kubectl apply -f manifests/` applies, in that
// order, one YAML stream) with the image the DaemonSet and the controller
// run set to one reference, so that installing is one command:
//
//	go run ./hack/release -image registry.example.com/nodeconfd/nodeconfd:v0.1.0 -out bin/nodeconfd.yaml
//	kubectl apply -f bin/nodeconfd.yaml
//
// `make release` runs it. The manifests name the image by the default
// repository and the VERSION file; the release replaces exactly those
// references and refuses a manifest tree that names no image or an -image
// that is not a valid reference.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// defaultRepo is the repository the manifests name (hack/buildimage's).
const defaultRepo = "quay.io/nodeconfd/nodeconfd"

func main() {
	image := flag.String("image", "", "the image reference the release runs (default: the manifests', "+defaultRepo+":VERSION)")
	out := flag.String("out", "", "the file to write (default: standard output)")
	dir := flag.String("manifests", "manifests", "the manifests folder")
	version := flag.String("version", "", "the release (default: the VERSION file beside the manifests folder)")
	flag.Parse()
	if err := run(*dir, *version, *image, *out); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(dir, version, image, out string) error {
	if version == "" {
		b, err := os.ReadFile(filepath.Join(dir, "..", "VERSION"))
		if err != nil {
			return fmt.Errorf("reading the version (or give -version): %w", err)
		}
		version = strings.TrimSpace(string(b))
	}
	if image == "" {
		image = defaultRepo + ":" + version
	}
	data, err := Render(dir, defaultRepo+":"+version, image)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(data)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("making the output folder: %w", err)
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("writing the release manifest: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("moving the release manifest into place: %w", err)
	}
	fmt.Fprintf(os.Stderr, "release: %s (image %s)\n", out, image)
	return nil
}
