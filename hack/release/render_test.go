package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestRenderSameObjects renders the release with another image and wants
// the same objects as manifests/, in the same order, but for the image of
// the DaemonSet's and the controller's containers.
func TestRenderSameObjects(t *testing.T) {
	version := readVersion(t)
	from, image := defaultRepo+":"+version, "10.250.3.1:5000/nodeconfd/nodeconfd:"+version
	out, err := Render("../../manifests", from, image)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeAll(t, out)
	var want []any
	files, err := filepath.Glob("../../manifests/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, decodeAll(t, data)...)
	}
	if len(got) != len(want) {
		t.Fatalf("the release has %d objects, manifests/ %d", len(got), len(want))
	}
	set := 0
	for i := range want {
		set += replaceImage(want[i], from, image)
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("object %d (%s) differs from manifests/'s", i, describe(want[i]))
		}
	}
	if set != 2 {
		t.Errorf("%d containers run %s in manifests/, want 2 (the DaemonSet's and the controller's)", set, from)
	}
	if strings.Contains(string(out), from) {
		t.Errorf("the release still names %s", from)
	}
}

func TestRenderRefuses(t *testing.T) {
	for _, bad := range []string{"", "Registry/UPPER:x", "host:5000/repo:bad tag"} {
		if _, err := Render("../../manifests", defaultRepo+":"+readVersion(t), bad); err == nil ||
			!strings.Contains(err.Error(), "-image") {
			t.Errorf("Render took image %q (err %v)", bad, err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("kind: ConfigMap\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Render(dir, "quay.io/x/y:v1", "example.com/x/y:v1"); err == nil || !strings.Contains(err.Error(), "name no image") {
		t.Errorf("Render of manifests naming no image: err %v, want one saying so", err)
	}
}

func TestSetImage(t *testing.T) {
	in := "  - image: a/b:1\n    image: a/b:1\r\nimage: a/b:2\n# image: a/b:1 in a comment stays\n"
	got, n := setImage([]byte(in), "a/b:1", "c/d:1")
	want := "  - image: c/d:1\n    image: c/d:1\r\nimage: a/b:2\n# image: a/b:1 in a comment stays\n"
	if string(got) != want || n != 2 {
		t.Errorf("setImage = %q, %d; want %q, 2", got, n, want)
	}
}

func readVersion(t *testing.T) string {
	b, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// decodeAll reads a YAML stream's documents, leaving out empty ones (as
// kubectl does).
func decodeAll(t *testing.T, data []byte) []any {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []any
	for {
		var v any
		if err := d.Decode(&v); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			t.Fatal(err)
		}
		if v != nil {
			docs = append(docs, v)
		}
	}
}

// replaceImage sets every "image" field equal to from to image, in place,
// and counts them.
func replaceImage(v any, from, image string) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "image" && s == from {
				x[k] = image
				n++
			} else {
				n += replaceImage(e, from, image)
			}
		}
	case []any:
		for _, e := range x {
			n += replaceImage(e, from, image)
		}
	}
	return n
}

func describe(v any) string {
	m, _ := v.(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	kind, _ := m["kind"].(string)
	name, _ := meta["name"].(string)
	return kind + "/" + name
}
