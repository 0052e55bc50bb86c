package kubeapi

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	opv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// Scheme holds the daemon's API types, and only those.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	// List and get options are encoded as query parameters through "v1".
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(policyv1.AddToScheme(s))
	utilruntime.Must(coordinationv1.AddToScheme(s))
	utilruntime.Must(appsv1.AddToScheme(s))
	utilruntime.Must(autoscalingv2.AddToScheme(s))
	utilruntime.Must(storagev1.AddToScheme(s))
	utilruntime.Must(mcfgv1.Install(s))
	// Of operator.openshift.io, only the MachineConfiguration (the node
	// disruption policy).
	s.AddKnownTypes(opv1.GroupVersion, &opv1.MachineConfiguration{}, &opv1.MachineConfigurationList{})
	metav1.AddToGroupVersion(s, opv1.GroupVersion)
	return s
}

// restAPI is API over client-go's REST clients, one per API group.
type restAPI struct {
	params                                     runtime.ParameterCodec
	core, policy, coordination, mcfg, operator rest.Interface
	// apps and autoscaling serve the drain's surge (drain.Surge).
	apps, autoscaling rest.Interface
	// storage serves the wait for volumes to detach before a reboot.
	storage rest.Interface
}

// NewAPI builds the daemon's API clients from cfg; all share one HTTP client
// (one connection pool, one rate limiter per group).
func NewAPI(cfg *rest.Config) (API, error) {
	scheme := Scheme()
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP client: %w", err)
	}
	a := &restAPI{params: runtime.NewParameterCodec(scheme)}
	for _, g := range []struct {
		gv       schema.GroupVersion
		path     string
		into     *rest.Interface
		protobuf bool
	}{
		{corev1.SchemeGroupVersion, "/api", &a.core, true},
		{policyv1.SchemeGroupVersion, "/apis", &a.policy, true},
		{coordinationv1.SchemeGroupVersion, "/apis", &a.coordination, true},
		{appsv1.SchemeGroupVersion, "/apis", &a.apps, true},
		{autoscalingv2.SchemeGroupVersion, "/apis", &a.autoscaling, true},
		{storagev1.SchemeGroupVersion, "/apis", &a.storage, true},
		{mcfgv1.GroupVersion, "/apis", &a.mcfg, false}, // custom resources: JSON only
		{opv1.GroupVersion, "/apis", &a.operator, false},
	} {
		c := rest.CopyConfig(cfg)
		c.GroupVersion = &g.gv
		c.APIPath = g.path
		c.NegotiatedSerializer = codecs
		if g.protobuf {
			// Kubernetes' own types in protobuf, as the kubelet and the
			// controllers read them: the API server encodes a LIST of the
			// disruption queue's Leases, or a watch event, several times
			// cheaper than in JSON, and a fleet sends it many of them.
			c.ContentType = runtime.ContentTypeProtobuf
			c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		}
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rc, err := rest.RESTClientForConfigAndClient(c, httpClient)
		if err != nil {
			return nil, fmt.Errorf("building the %s client: %w", g.gv, err)
		}
		*g.into = rc
	}
	return a, nil
}

// newClient is one resource's client in the given namespace ("" for
// cluster-scoped resources).
func newClient[T Object, L runtime.Object](a *restAPI, c rest.Interface, resource, namespace string,
	newT func() T, newL func() L,
) *client[T, L] {
	return &client[T, L]{rest: c, params: a.params, resource: resource, namespace: namespace, newT: newT, newL: newL}
}

func (a *restAPI) Nodes() Resource[*corev1.Node, *corev1.NodeList] {
	return newClient(a, a.core, "nodes", "", func() *corev1.Node { return &corev1.Node{} },
		func() *corev1.NodeList { return &corev1.NodeList{} })
}

func (a *restAPI) Pods(namespace string) Resource[*corev1.Pod, *corev1.PodList] {
	return newClient(a, a.core, "pods", namespace, func() *corev1.Pod { return &corev1.Pod{} },
		func() *corev1.PodList { return &corev1.PodList{} })
}

func (a *restAPI) Events(namespace string) Resource[*corev1.Event, *corev1.EventList] {
	return newClient(a, a.core, "events", namespace, func() *corev1.Event { return &corev1.Event{} },
		func() *corev1.EventList { return &corev1.EventList{} })
}

func (a *restAPI) PodDisruptionBudgets(namespace string) Resource[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList] {
	return newClient(a, a.policy, "poddisruptionbudgets", namespace,
		func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} },
		func() *policyv1.PodDisruptionBudgetList { return &policyv1.PodDisruptionBudgetList{} })
}

func (a *restAPI) Leases(namespace string) Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return newClient(a, a.coordination, "leases", namespace, func() *coordinationv1.Lease { return &coordinationv1.Lease{} },
		func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}

func (a *restAPI) MachineConfigs() Resource[*mcfgv1.MachineConfig, *mcfgv1.MachineConfigList] {
	return newClient(a, a.mcfg, "machineconfigs", "", func() *mcfgv1.MachineConfig { return &mcfgv1.MachineConfig{} },
		func() *mcfgv1.MachineConfigList { return &mcfgv1.MachineConfigList{} })
}

func (a *restAPI) MachineConfigNodes() Resource[*mcfgv1.MachineConfigNode, *mcfgv1.MachineConfigNodeList] {
	return newClient(a, a.mcfg, "machineconfignodes", "",
		func() *mcfgv1.MachineConfigNode { return &mcfgv1.MachineConfigNode{} },
		func() *mcfgv1.MachineConfigNodeList { return &mcfgv1.MachineConfigNodeList{} })
}

func (a *restAPI) MachineConfigPools() Resource[*mcfgv1.MachineConfigPool, *mcfgv1.MachineConfigPoolList] {
	return newClient(a, a.mcfg, "machineconfigpools", "",
		func() *mcfgv1.MachineConfigPool { return &mcfgv1.MachineConfigPool{} },
		func() *mcfgv1.MachineConfigPoolList { return &mcfgv1.MachineConfigPoolList{} })
}

func (a *restAPI) VolumeAttachments() Resource[*storagev1.VolumeAttachment, *storagev1.VolumeAttachmentList] {
	return newClient(a, a.storage, "volumeattachments", "",
		func() *storagev1.VolumeAttachment { return &storagev1.VolumeAttachment{} },
		func() *storagev1.VolumeAttachmentList { return &storagev1.VolumeAttachmentList{} })
}

func (a *restAPI) PersistentVolumes() Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList] {
	return newClient(a, a.core, "persistentvolumes", "",
		func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} },
		func() *corev1.PersistentVolumeList { return &corev1.PersistentVolumeList{} })
}

func (a *restAPI) Evict(ctx context.Context, eviction *policyv1.Eviction) error {
	return postEviction(a.core, ctx, eviction)
}

// postEviction posts eviction through c, a client of the core group, with
// no retry.
func postEviction(c rest.Interface, ctx context.Context, eviction *policyv1.Eviction) error {
	return c.Post().Namespace(eviction.Namespace).Resource("pods").Name(eviction.Name).SubResource("eviction").
		Body(eviction).MaxRetries(0).Do(ctx).Error()
}
