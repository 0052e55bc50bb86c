package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Render joins the manifests in dir (its *.yaml and *.json files, not its
// subfolders: what `kubectl apply -f dir` reads, in its lexical order) into
// one YAML stream, with every `image: from` line's reference set to image.
// Comments and layout stay as they are.
func Render(dir, from, image string) ([]byte, error) {
	if _, err := name.ParseReference(image, name.StrictValidation); err != nil {
		return nil, fmt.Errorf("-image %q: not an image reference: %w", image, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the manifests: %w", err)
	}
	var files []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			files = append(files, e.Name())
		}
	}
	sort.Strings(files)
	var out bytes.Buffer
	set := 0
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("reading the manifests: %w", err)
		}
		data, n := setImage(data, from, image)
		set += n
		fmt.Fprintf(&out, "---\n# Source: manifests/%s\n", f)
		out.Write(bytes.TrimPrefix(data, []byte("---\n")))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			out.WriteByte('\n')
		}
	}
	if set == 0 {
		return nil, fmt.Errorf("the manifests in %s name no image %s: nothing to set", dir, from)
	}
	return out.Bytes(), nil
}

// setImage replaces the reference of each `image: from` line (any indent,
// as a list item or not) and counts them.
func setImage(data []byte, from, image string) ([]byte, int) {
	lines := strings.SplitAfter(string(data), "\n")
	n := 0
	for i, l := range lines {
		body := strings.TrimRight(l, "\r\n")
		trimmed := strings.TrimLeft(body, " -")
		if v, ok := strings.CutPrefix(trimmed, "image:"); ok && strings.TrimSpace(v) == from {
			lines[i] = body[:len(body)-len(trimmed)] + "image: " + image + l[len(body):]
			n++
		}
	}
	return []byte(strings.Join(lines, "")), n
}
