package controlplane

import (
	"context"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RestConfigForPod returns a client config with a ServiceAccount token bound
// to pod (TokenRequest with a boundObjectRef), as the kubelet projects into
// the pod: the API server adds the pod's node to it, so requests made with it
// carry the authentication.kubernetes.io/node-name claim. The pod must run as
// the ServiceAccount (spec.serviceAccountName) and be bound to a node
// (spec.nodeName) for the claim; the token is valid while the pod exists.
func (c *ControlPlane) RestConfigForPod(ctx context.Context, pod *corev1.Pod) (*rest.Config, error) {
	client, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	expiry := int64(tokenLifetime)
	sa := pod.Spec.ServiceAccountName
	tr, err := client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry, BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for serviceaccount %s/%s bound to pod %s: %w", pod.Namespace, sa, pod.Name, err)
	}
	return &rest.Config{
		Host:            c.cfg.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caCert},
		BearerToken:     tr.Status.Token,
		QPS:             c.cfg.QPS,
		Burst:           c.cfg.Burst,
	}, nil
}

// KubeconfigForPod writes a kubeconfig with a token bound to pod (see
// RestConfigForPod) and returns its path: the daemon's credentials in its pod.
func (c *ControlPlane) KubeconfigForPod(ctx context.Context, pod *corev1.Pod) (string, error) {
	cfg, err := c.RestConfigForPod(ctx, pod)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.opts.Dir, fmt.Sprintf("%s-%s-pod-%s.kubeconfig", pod.Namespace, pod.Spec.ServiceAccountName, pod.Name))
	user := "system:serviceaccount:" + pod.Namespace + ":" + pod.Spec.ServiceAccountName
	if err := writeKubeconfig(path, cfg.Host, c.pki.caCert, user, nil, nil, cfg.BearerToken); err != nil {
		return "", err
	}
	return path, nil
}
