package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates every CustomResourceDefinition found in the YAML files of dir and waits
// until each is Established and its watch cache serves (warm.go).
func installCRDs(ctx context.Context, cfg *rest.Config, dir string) error {
	crds, err := readCRDs(dir)
	if err != nil {
		return err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	api := client.Resource(crdResource)
	for _, crd := range crds {
		if _, err := api.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		name := crd.GetName()
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return established(got), nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", name, err)
		}
	}
	return warmWatchCaches(ctx, cfg, crds)
}

// readCRDs returns the CustomResourceDefinitions in the .yaml, .yml and .json files of dir.
func readCRDs(dir string) ([]*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading CRD folder: %w", err)
	}
	var crds []*unstructured.Unstructured
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		objs, err := decodeFile(path)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if obj.GetKind() == "CustomResourceDefinition" && strings.HasPrefix(obj.GetAPIVersion(), "apiextensions.k8s.io/") {
				crds = append(crds, obj)
			}
		}
	}
	return crds, nil
}

// decodeFile reads every object of a multi-document YAML (or JSON) file.
func decodeFile(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", path, err)
		}
		if len(obj) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
}

// established reports whether a CRD's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
