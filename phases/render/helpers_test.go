package render

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/vincent-petithory/dataurl"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	image1 = "quay.io/example/os@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	image2 = "quay.io/example/os@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	image3 = "quay.io/example/os@sha256:3333333333333333333333333333333333333333333333333333333333333333"
)

// fragment is a MachineConfig of role with an Ignition config (nil: none).
func fragment(t *testing.T, name, role string, ign *types.Config) *mcfgv1.MachineConfig {
	t.Helper()
	mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RoleLabel: role}}}
	if ign != nil {
		if ign.Ignition.Version == "" {
			ign.Ignition.Version = types.MaxVersion.String()
		}
		raw, err := json.Marshal(ign)
		if err != nil {
			t.Fatal(err)
		}
		mc.Spec.Config = runtime.RawExtension{Raw: raw}
	}
	return mc
}

// withSpec sets the fragment's spec fields besides its Ignition config.
func withSpec(mc *mcfgv1.MachineConfig, f func(*mcfgv1.MachineConfigSpec)) *mcfgv1.MachineConfig {
	f(&mc.Spec)
	return mc
}

// ignFiles is an Ignition config of files.
func ignFiles(files ...types.File) *types.Config {
	return &types.Config{Storage: types.Storage{Files: files}}
}

// rootFile is upstream's CreateUncompressedIgn3File: source as given,
// owner root.
func rootFile(path, source string, mode int) types.File {
	return types.File{
		Node:          types.Node{Path: path, User: types.NodeUser{Name: ptr("root")}},
		FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: ptr(source)}, Mode: ptr(mode)},
	}
}

// gzipFile is upstream's CreateGzippedIgn3File.
func gzipFile(t *testing.T, path, content string, mode int) types.File {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f := rootFile(path, dataurl.EncodeBytes(buf.Bytes()), mode)
	f.Contents.Compression = ptr("gzip")
	return f
}

// wantIgnition is the JSON a merge yields for cfg.
func wantIgnition(t *testing.T, cfg types.Config) string {
	t.Helper()
	if cfg.Ignition.Version == "" {
		cfg.Ignition.Version = types.MaxVersion.String()
	}
	raw, err := compactJSON(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
