package controlplane

import (
	"context"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// tokenLifetime is how long service account tokens issued for tests stay valid.
const tokenLifetime = 24 * 60 * 60 // seconds

// RestConfigFor returns a client config that authenticates as a ServiceAccount with a token
// from the TokenRequest API, so the caller has exactly the rights RBAC grants it. The
// ServiceAccount must exist.
func (c *ControlPlane) RestConfigFor(ctx context.Context, namespace, serviceAccount string) (*rest.Config, error) {
	client, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	expiry := int64(tokenLifetime)
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}},
		metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for serviceaccount %s/%s: %w", namespace, serviceAccount, err)
	}
	return &rest.Config{
		Host:            c.cfg.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caCert},
		BearerToken:     tr.Status.Token,
		QPS:             c.cfg.QPS,
		Burst:           c.cfg.Burst,
	}, nil
}

// KubeconfigFor writes a kubeconfig that authenticates as a ServiceAccount (see RestConfigFor)
// and returns its path, e.g. to run the daemon with the manifests' least rights.
func (c *ControlPlane) KubeconfigFor(ctx context.Context, namespace, serviceAccount string) (string, error) {
	cfg, err := c.RestConfigFor(ctx, namespace, serviceAccount)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.opts.Dir, fmt.Sprintf("%s-%s.kubeconfig", namespace, serviceAccount))
	user := "system:serviceaccount:" + namespace + ":" + serviceAccount
	if err := writeKubeconfig(path, cfg.Host, c.pki.caCert, user, nil, nil, cfg.BearerToken); err != nil {
		return "", err
	}
	return path, nil
}

// writeKubeconfig writes a single-context kubeconfig with either a client certificate or a token.
func writeKubeconfig(path, host string, ca []byte, user string, cert, key []byte, token string) error {
	if err := clientcmd.WriteToFile(*kubeconfigFor(host, ca, user, cert, key, token), path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
