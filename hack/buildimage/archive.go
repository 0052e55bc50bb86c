package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// refNameAnnotation names an image in an OCI layout's index.json;
// containerdNameAnnotation is the name containerd's importer gives it (it
// takes a full reference from this one as is, whatever --base-name says).
const (
	refNameAnnotation        = "org.opencontainers.image.ref.name"
	containerdNameAnnotation = "io.containerd.image.name"
)

// writeArchive writes img as an OCI image layout in a tar at out (index.json
// naming it ref, oci-layout, blobs/sha256/...), the form `ctr images import`,
// `podman load` and `skopeo copy oci-archive:` read. The tar's entries are
// sorted and owned by root, every time at mtime, so the same image gives the
// same archive. out is replaced atomically.
func writeArchive(out string, img v1.Image, ref name.Tag, mtime time.Time) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading the image's config: %w", err)
	}
	return writeLayout(out, mtime, func(p layout.Path) error {
		return p.AppendImage(img, layout.WithAnnotations(nameAnnotations(ref)),
			layout.WithPlatform(v1.Platform{OS: cf.OS, Architecture: cf.Architecture}))
	})
}

// writeIndexArchive is writeArchive for a multi-architecture image: the
// layout's index.json names the image index, which names each platform's
// image.
func writeIndexArchive(out string, idx v1.ImageIndex, ref name.Tag, mtime time.Time) error {
	return writeLayout(out, mtime, func(p layout.Path) error {
		return p.AppendIndex(idx, layout.WithAnnotations(nameAnnotations(ref)))
	})
}

func nameAnnotations(ref name.Tag) map[string]string {
	return map[string]string{refNameAnnotation: ref.Name(), containerdNameAnnotation: ref.Name()}
}

// writeLayout writes an OCI layout, to which add appends the image, as a
// tar at out.
func writeLayout(out string, mtime time.Time, add func(layout.Path) error) error {
	dir, err := os.MkdirTemp(filepath.Dir(out), ".buildimage-layout-")
	if err != nil {
		return fmt.Errorf("making the layout directory: %w", err)
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := add(p); err != nil {
		return fmt.Errorf("writing the image to the OCI layout: %w", err)
	}
	tmp := out + ".tmp"
	if err := tarDir(tmp, dir, mtime); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("moving the archive into place: %w", err)
	}
	return nil
}

// tarDir writes the tree under dir to the tar file out, entries in lexical
// order (WalkDir's), directories 0755 and files 0644, owned by root.
func tarDir(out, dir string, mtime time.Time) error {
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("creating the archive: %w", err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime, Format: tar.FormatUSTAR}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		return tarFile(tw, h, p)
	})
	if err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	return f.Close()
}

// tarFile appends the regular file at p under the header h.
func tarFile(tw *tar.Writer, h *tar.Header, p string) error {
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, st.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, src)
	return err
}
