package main

import (
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestIndexPush builds a two-architecture index from stand-in binaries,
// pushes it to a registry (go-containerregistry's, on loopback HTTP) and
// pulls it back by tag: the same digest, one image per platform, each with
// its own binary; the archive's layout names the same index.
func TestIndexPush(t *testing.T) {
	created := time.Unix(testEpoch, 0).UTC()
	specs := []spec{
		{Binary: []byte("amd64 binary"), Arch: "amd64", Created: created, Version: "v9.9.9"},
		{Binary: []byte("arm64 binary"), Arch: "arm64", Created: created, Version: "v9.9.9"},
	}
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/nodeconfd/nodeconfd:v9.9.9"
	archive := filepath.Join(t.TempDir(), "image.tar")
	idx, res, err := buildIndex(specs, ref, archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := push(t.Context(), idx, ref); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(tag, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("pulling %s back: %v", ref, err)
	}
	if d, _ := pulled.Digest(); d != res.Digest {
		t.Errorf("pulled digest %s, built %s", d, res.Digest)
	}
	im, err := pulled.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != len(specs) {
		t.Fatalf("index has %d manifests, want %d", len(im.Manifests), len(specs))
	}
	for i, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != specs[i].Arch {
			t.Errorf("manifest %d: platform %v, want linux/%s", i, d.Platform, specs[i].Arch)
			continue
		}
		img, err := pulled.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != specs[i].Arch {
			t.Errorf("%s image's config says architecture %s", specs[i].Arch, cf.Architecture)
		}
		if got := string(layerEntries(t, img)[binaryPath[1:]].Data); got != string(specs[i].Binary) {
			t.Errorf("%s image's binary is %q, want %q", specs[i].Arch, got, specs[i].Binary)
		}
	}
	checkLayoutNames(t, archive, ref, res.Digest)

	// Reproducible: a second build gives the same index and archive.
	again := filepath.Join(t.TempDir(), "image.tar")
	if _, res2, err := buildIndex(specs, ref, again); err != nil {
		t.Fatal(err)
	} else if res2.Digest != res.Digest {
		t.Errorf("second build's index digest %s, first %s", res2.Digest, res.Digest)
	}
	if a, b := fileSum(t, archive), fileSum(t, again); a != b {
		t.Errorf("the archives differ: sha256 %x and %x", a, b)
	}
}

// checkLayoutNames untars the archive and wants its index.json to name the
// index by ref, in both annotations.
func checkLayoutNames(t *testing.T, archive, ref string, digest v1.Hash) {
	dir := t.TempDir()
	if out, err := exec.CommandContext(t.Context(), "tar", "-xf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar -xf: %v: %s", err, out)
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != digest {
		t.Fatalf("index.json names %v, want the one index %s", im.Manifests, digest)
	}
	for _, k := range []string{refNameAnnotation, containerdNameAnnotation} {
		if got := im.Manifests[0].Annotations[k]; got != ref {
			t.Errorf("index.json's %s = %q, want %q", k, got, ref)
		}
	}
}

func TestParseArches(t *testing.T) {
	if got, err := parseArches("amd64, arm64"); err != nil || strings.Join(got, ",") != "amd64,arm64" {
		t.Errorf("parseArches(amd64, arm64) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "amd64,", "amd64,amd64"} {
		if _, err := parseArches(bad); err == nil {
			t.Errorf("parseArches(%q) took it", bad)
		}
	}
}
