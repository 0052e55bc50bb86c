package main

import (
	"archive/tar"
	"crypto/sha256"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// testEpoch stands for SOURCE_DATE_EPOCH (2026-01-01).
const testEpoch = 1767225600

// TestImage builds the binary once (the slow part) and checks the image
// built from it: two builds give one digest and one archive, the Dockerfile
// describes the same image, the DaemonSet names it, and its binary runs.
func TestImage(t *testing.T) {
	ctx := t.Context()
	root, err := repoRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(vb))
	binary, err := buildBinary(ctx, root, filepath.Join(t.TempDir(), "nodeconfd"), version, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	s := spec{Binary: binary, Arch: runtime.GOARCH, Created: time.Unix(testEpoch, 0).UTC(),
		Version: version, Revision: "0123456789abcdef0123456789abcdef01234567"}
	ref := defaultRepo + ":" + version
	archive := filepath.Join(t.TempDir(), "image.tar")
	res, err := build(s, ref, archive)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s: %d bytes compressed, %d uncompressed", res.Ref, res.Digest, res.Compressed, res.Uncompressed)
	img := readArchive(t, archive, ref)

	t.Run("Reproducible", func(t *testing.T) { checkReproducible(t, s, ref, archive, res.Digest) })
	t.Run("Dockerfile", func(t *testing.T) { checkDockerfile(t, root, img, binary) })
	t.Run("DaemonSet", func(t *testing.T) { checkDaemonSet(t, root, ref) })
	t.Run("BinaryRuns", func(t *testing.T) { checkBinaryRuns(t, img, version) })
	t.Run("Containerd", func(t *testing.T) { checkContainerd(t, archive, ref, version) })
}

// checkReproducible builds again, to another directory, and wants the same
// manifest digest and the same archive, byte for byte.
func checkReproducible(t *testing.T, s spec, ref, first string, digest v1.Hash) {
	second := filepath.Join(t.TempDir(), "again", "image.tar")
	if err := os.MkdirAll(filepath.Dir(second), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := build(s, ref, second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != digest {
		t.Errorf("second build's digest %s, first %s", res.Digest, digest)
	}
	if a, b := fileSum(t, first), fileSum(t, second); a != b {
		t.Errorf("the archives differ: sha256 %x and %x", a, b)
	}
}

// checkDaemonSet wants the DaemonSet to run the image buildimage names.
func checkDaemonSet(t *testing.T, root, ref string) {
	data, err := os.ReadFile(filepath.Join(root, "manifests", "03-daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "image:"); ok {
			images = append(images, strings.TrimSpace(v))
		}
	}
	if len(images) != 1 || images[0] != ref {
		t.Errorf("the DaemonSet runs %q, `make image` builds %q", images, ref)
	}
}

// checkBinaryRuns extracts the binary from the layer, wants it static (an
// empty base has no dynamic loader) and runs `nodeconfd version`.
func checkBinaryRuns(t *testing.T, img v1.Image, version string) {
	entries := layerEntries(t, img)
	e, ok := entries[binaryPath[1:]]
	if !ok {
		t.Fatalf("no %s in the layer", binaryPath)
	}
	if e.Mode != 0o755 || e.Uid != 0 || e.Gid != 0 {
		t.Errorf("%s: mode %o owner %d:%d, want 755 0:0", binaryPath, e.Mode, e.Uid, e.Gid)
	}
	bin := filepath.Join(t.TempDir(), "nodeconfd")
	if err := os.WriteFile(bin, e.Data, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader; the image has none", binaryPath)
		}
	}
	f.Close()
	out, err := exec.CommandContext(t.Context(), bin, "version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != version {
		t.Errorf("nodeconfd version: %q, %v; want %q", out, err, version)
	}
}

// readArchive reads the archive back as an OCI layout and wants its one
// image named ref for OCI tools and for containerd.
func readArchive(t *testing.T, archive, ref string) v1.Image {
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "tar", "-xf", archive, "-C", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tar -xf: %v: %s", err, out)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want 1", len(m.Manifests))
	}
	d := m.Manifests[0]
	for _, key := range []string{refNameAnnotation, containerdNameAnnotation} {
		if d.Annotations[key] != ref {
			t.Errorf("index.json: %s = %q, want %q", key, d.Annotations[key], ref)
		}
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// layerEntry is one entry of the image's layer.
type layerEntry struct {
	Mode     int64
	Uid, Gid int
	Dir      bool
	Data     []byte
}

// layerEntries reads the image's one layer, by name without a leading "/".
func layerEntries(t *testing.T, img v1.Image) map[string]layerEntry {
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1 (FROM scratch adds none)", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	entries := map[string]layerEntry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		e := layerEntry{Mode: h.Mode, Uid: h.Uid, Gid: h.Gid, Dir: h.Typeflag == tar.TypeDir, Data: data}
		entries[strings.TrimSuffix(h.Name, "/")] = e
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// configOf is the image's run configuration; it also wants the config's
// time to be the build's.
func configOf(t *testing.T, img v1.Image, created time.Time) v1.Config {
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("config created %s, want %s (SOURCE_DATE_EPOCH)", cf.Created.Time, created)
	}
	return cf.Config
}
