package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// rootfs holds the files the image has besides the binary: the same tree the
// Dockerfile copies (COPY hack/buildimage/rootfs/ /).
//
//go:embed rootfs
var rootfs embed.FS

// binaryPath is where the image holds the daemon, its entrypoint.
const binaryPath = "/usr/bin/nodeconfd"

// config is the image's run configuration, the one the Dockerfile's final
// stage declares (USER, WORKDIR, ENV, ENTRYPOINT, CMD). User 0, WorkingDir /
// and PATH are what gcr.io/distroless/static-debian12 (the former base) set;
// its SSL_CERT_FILE is not, as the image has no CA bundle (docs/image.md).
func config() v1.Config {
	return v1.Config{
		User:       "0",
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Entrypoint: []string{binaryPath},
		Cmd:        []string{"start", "--root-mount=/rootfs"},
	}
}

// spec is what one image is built from.
type spec struct {
	Binary   []byte    // the static nodeconfd binary
	Arch     string    // GOARCH it was built for
	Created  time.Time // SOURCE_DATE_EPOCH: every timestamp in the image
	Version  string
	Revision string // the commit, "" when unknown
}

// file is one entry of the image's single layer.
type file struct {
	Name string // without the leading slash
	Mode int64
	Data []byte // nil for a directory
}

// newImage builds the OCI image: one layer holding the rootfs tree and the
// binary, the config above, every timestamp at s.Created.
func newImage(s spec) (v1.Image, error) {
	files, err := layerFiles(s.Binary)
	if err != nil {
		return nil, err
	}
	tarData, err := layerTar(files, s.Created)
	if err != nil {
		return nil, err
	}
	// Compressed here, once: the layer's digest and the archive read the
	// same bytes. Go's gzip writes no name or time, so they are reproducible.
	gz, err := gzipBytes(tarData)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	created := v1.Time{Time: s.Created}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   created,
			CreatedBy: "hack/buildimage: COPY hack/buildimage/rootfs/ /; COPY nodeconfd " + binaryPath,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = s.Arch, "linux"
	cf.Created = created
	cf.Config = config()
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	return mutate.Annotations(img, annotations(s)).(v1.Image), nil
}

// annotations are the manifest's OCI annotations. They stay out of the
// config so that the config is exactly what the Dockerfile declares.
func annotations(s spec) map[string]string {
	a := map[string]string{
		"org.opencontainers.image.title":   "nodeconfd",
		"org.opencontainers.image.version": s.Version,
		"org.opencontainers.image.created": s.Created.UTC().Format(time.RFC3339),
	}
	if s.Revision != "" {
		a["org.opencontainers.image.revision"] = s.Revision
	}
	return a
}

// layerFiles lists the layer's entries, parents before children, sorted.
func layerFiles(binary []byte) ([]file, error) {
	entries := map[string]file{}
	addDirs := func(name string) {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			entries[d+"/"] = file{Name: d + "/", Mode: 0o755}
		}
	}
	err := fs.WalkDir(rootfs, "rootfs", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := rootfs.ReadFile(p)
		if err != nil {
			return err
		}
		name := p[len("rootfs/"):]
		entries[name] = file{Name: name, Mode: 0o644, Data: data}
		addDirs(name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded rootfs: %w", err)
	}
	name := binaryPath[1:]
	entries[name] = file{Name: name, Mode: 0o755, Data: binary}
	addDirs(name)
	files := make([]file, 0, len(entries))
	for _, f := range entries {
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// layerTar writes the entries as a tar owned by root, every time at mtime:
// nothing of the build machine (owners, times, order) reaches the image.
func layerTar(files []file, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.Name,
			Mode:    f.Mode,
			ModTime: mtime,
			Format:  tar.FormatUSTAR,
		}
		if f.Data == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("writing the layer entry %s: %w", f.Name, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("writing the layer entry %s: %w", f.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// gzipBytes compresses data at the best level: the image is pulled to every
// node, built once.
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	return buf.Bytes(), nil
}
