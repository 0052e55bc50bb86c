package main

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// checkDockerfile wants the Dockerfile and the built image to describe one
// image: an empty base, the same files (names, contents, modes), the same
// run configuration, and the binary built with the same `go build`.
func checkDockerfile(t *testing.T, root string, img v1.Image, binary []byte) {
	df, err := parseDockerfile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if df.Base != "scratch" {
		t.Errorf("the final stage is FROM %s; the image is built FROM scratch", df.Base)
	}
	want := v1.Config{User: df.User, WorkingDir: df.WorkDir, Env: df.Env, Entrypoint: df.Entrypoint, Cmd: df.Cmd}
	if got := configOf(t, img, time.Unix(testEpoch, 0)); !reflect.DeepEqual(got, want) {
		t.Errorf("the image's config\n%+v\nthe Dockerfile's\n%+v", got, want)
	}
	wantFiles := dockerfileFiles(t, root, df, binary)
	gotFiles := map[string]layerEntry{}
	for name, e := range layerEntries(t, img) {
		if e.Dir {
			if e.Mode != 0o755 || e.Uid != 0 || e.Gid != 0 {
				t.Errorf("directory /%s: mode %o owner %d:%d, want 755 0:0", name, e.Mode, e.Uid, e.Gid)
			}
			continue
		}
		gotFiles[name] = e
	}
	if g, w := sortedKeys(gotFiles), sortedKeys(wantFiles); !slices.Equal(g, w) {
		t.Fatalf("the image's files %q, the Dockerfile's %q", g, w)
	}
	for name, w := range wantFiles {
		g := gotFiles[name]
		if g.Mode != w.Mode || g.Uid != 0 || g.Gid != 0 || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("/%s: mode %o owner %d:%d (%d bytes); the Dockerfile's: mode %o owner 0:0 (%d bytes)",
				name, g.Mode, g.Uid, g.Gid, len(g.Data), w.Mode, len(w.Data))
		}
	}
}

// dockerfileFiles is what the final stage's COPYs put in the image, as
// Docker would: a build-context directory's files with git's modes (644, or
// 755 when executable), owned by root; the binary from the build stage,
// which must be built with goBuildArgs.
func dockerfileFiles(t *testing.T, root string, df dockerfile, binary []byte) map[string]layerEntry {
	files := map[string]layerEntry{}
	for _, c := range df.Copies {
		switch c.From {
		case "":
			files = contextFiles(t, root, c, files)
		case "build":
			want := goBuildArgs("$(cat VERSION)", c.Src)
			if !slices.Equal(df.GoArgs, want) || !slices.Contains(df.GoEnv, "CGO_ENABLED=0") {
				t.Errorf("the Dockerfile builds %s with %q %q; buildimage with CGO_ENABLED=0 go %q",
					c.Src, df.GoEnv, df.GoArgs, want)
			}
			files[c.Dst[1:]] = layerEntry{Mode: 0o755, Data: binary}
		default:
			t.Errorf("COPY --from=%s: no such stage", c.From)
		}
	}
	return files
}

// contextFiles adds the files of the build-context directory c.Src.
func contextFiles(t *testing.T, root string, c dockerCopy, files map[string]layerEntry) map[string]layerEntry {
	src := filepath.Join(root, filepath.FromSlash(c.Src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		files[path.Join(c.Dst, filepath.ToSlash(rel))[1:]] = layerEntry{Mode: mode, Data: data}
		return nil
	})
	if err != nil {
		t.Fatalf("reading COPY %s %s: %v", c.Src, c.Dst, err)
	}
	return files
}

func sortedKeys(m map[string]layerEntry) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
