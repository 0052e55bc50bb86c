package kubeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// ScaleTarget is a workload of any kind reached through its scale
// subresource: the drain's surge of a pod whose owner is neither a
// Deployment nor a StatefulSet (a bare ReplicaSet, a custom resource).
type ScaleTarget struct {
	APIVersion, Resource, Namespace, Name string
}

func (s ScaleTarget) path() string {
	base := "/apis/" + s.APIVersion
	if !strings.Contains(s.APIVersion, "/") {
		base = "/api/" + s.APIVersion // the core group
	}
	return base + "/namespaces/" + s.Namespace + "/" + s.Resource + "/" + s.Name + "/scale"
}

// scales reads and patches scale subresources over any client of the API
// server (AbsPath: the client's own group does not matter), in JSON.
type scales struct{ c rest.Interface }

// ResourceOf finds, by discovery, the resource of a kind in a group
// version and whether it has a scale subresource.
func (s scales) ResourceOf(ctx context.Context, apiVersion, kind string) (resource string, scalable bool, err error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return "", false, fmt.Errorf("owner apiVersion %q: %w", apiVersion, err)
	}
	path := "/apis/" + gv.String()
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	raw, err := s.c.Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return "", false, fmt.Errorf("discovering the resources of %s: %w", apiVersion, err)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", false, fmt.Errorf("discovering the resources of %s: %w", apiVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			resource = r.Name
		}
	}
	for _, r := range list.APIResources {
		if resource != "" && r.Name == resource+"/scale" {
			scalable = true
		}
	}
	return resource, scalable, nil
}

// GetScale reads a workload's scale.
func (s scales) GetScale(ctx context.Context, t ScaleTarget) (*autoscalingv1.Scale, error) {
	raw, err := s.c.Get().AbsPath(t.path()).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var sc autoscalingv1.Scale
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, fmt.Errorf("reading the scale of %s/%s: %w", t.Namespace, t.Name, err)
	}
	return &sc, nil
}

// PatchScale applies a JSON patch to a workload's scale.
func (s scales) PatchScale(ctx context.Context, t ScaleTarget, patch []byte, fieldManager string) error {
	return s.c.Patch(types.JSONPatchType).AbsPath(t.path()).Param("fieldManager", fieldManager).
		SetHeader("Accept", "application/json").Body(patch).Do(ctx).Error()
}

// Scales is the scale subresources of any workload, over client c.
func Scales(c rest.Interface) interface {
	ResourceOf(ctx context.Context, apiVersion, kind string) (string, bool, error)
	GetScale(ctx context.Context, t ScaleTarget) (*autoscalingv1.Scale, error)
	PatchScale(ctx context.Context, t ScaleTarget, patch []byte, fieldManager string) error
} {
	return scales{c}
}
