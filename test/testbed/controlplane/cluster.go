package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// clusterControllers are the kube-controller-manager controllers a cluster
// of real nodes needs here: the workload controllers that put pods on the
// nodes and recreate what a drain evicts, the disruption controller the
// evictions consult, the node lifecycle controller that lifts the
// not-ready taint a new node is registered with once its kubelet reports it
// ready, the service accounts and the CA ConfigMap that pods' projected
// tokens need, the garbage collector and pod GC that clean up after
// deleted owners and nodes, and the EndpointSlices of Services, through
// which Prometheus finds the metrics Services' pods (test/cluster).
var clusterControllers = []string{
	"daemonset-controller", "replicaset-controller", "deployment-controller", "disruption-controller",
	"node-lifecycle-controller",
	"serviceaccount-controller", "root-ca-certificate-publisher-controller",
	"garbage-collector-controller", "pod-garbage-collector-controller",
	"endpointslice-controller",
}

// clusterAPIServerArgs are kube-apiserver's flags for a cluster of real
// nodes (Options.Cluster), in place of the defaults' last three: the Node
// authorizer and NodeRestriction, as a real cluster runs them, hold each
// kubelet to its own node; the ServiceAccount admission plugin mounts the
// pods' projected tokens; the API server listens on every address, since
// the nodes reach it from their own network namespaces; and it presents a
// client certificate to the kubelets (logs, exec, /stats).
func (c *ControlPlane) clusterAPIServerArgs() []string {
	pkiDir := filepath.Join(c.opts.Dir, "pki")
	return []string{
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--bind-address=0.0.0.0",
		"--kubelet-client-certificate=" + filepath.Join(pkiDir, "kubelet-client.crt"),
		"--kubelet-client-key=" + filepath.Join(pkiDir, "kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP",
	}
}

// writeClusterPKI writes the API server's kubelet client certificate and
// the kubeconfigs of kube-scheduler and kube-controller-manager, each a
// client certificate of the identity the bootstrap RBAC policy grants them.
func (c *ControlPlane) writeClusterPKI() error {
	pkiDir := filepath.Join(c.opts.Dir, "pki")
	cert, key, err := c.pki.clientCert("kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"kubelet-client.crt": cert, "kubelet-client.key": key} {
		if err := os.WriteFile(filepath.Join(pkiDir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	for _, name := range []string{"kube-scheduler", "kube-controller-manager"} {
		user := "system:" + name
		cert, key, err := c.pki.clientCert(user)
		if err != nil {
			return err
		}
		path := filepath.Join(c.opts.Dir, name+".kubeconfig")
		if err := writeKubeconfig(path, c.cfg.Host, c.pki.caCert, user, cert, key, ""); err != nil {
			return err
		}
	}
	return nil
}

// startClusterLocked starts kube-scheduler and kube-controller-manager and waits
// until both answer /healthz. c.mu is held.
func (c *ControlPlane) startClusterLocked(ctx context.Context) error {
	pkiDir := filepath.Join(c.opts.Dir, "pki")
	schedPort, err := freePort()
	if err != nil {
		return err
	}
	kcmPort, err := freePort()
	if err != nil {
		return err
	}
	c.scheduler, err = startProcess(c.opts.Dir, "kube-scheduler", filepath.Join(c.nodeBinDir, "kube-scheduler"), c.opts.Nice, []string{
		"--kubeconfig=" + filepath.Join(c.opts.Dir, "kube-scheduler.kubeconfig"),
		"--authentication-kubeconfig=" + filepath.Join(c.opts.Dir, "kube-scheduler.kubeconfig"),
		"--authorization-kubeconfig=" + filepath.Join(c.opts.Dir, "kube-scheduler.kubeconfig"),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(schedPort),
		"--leader-elect=false",
	})
	if err != nil {
		return err
	}
	kcmConfig := filepath.Join(c.opts.Dir, "kube-controller-manager.kubeconfig")
	c.controllerManager, err = startProcess(c.opts.Dir, "kube-controller-manager",
		filepath.Join(c.nodeBinDir, "kube-controller-manager"), c.opts.Nice, []string{
			"--kubeconfig=" + kcmConfig,
			"--authentication-kubeconfig=" + kcmConfig,
			"--authorization-kubeconfig=" + kcmConfig,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(kcmPort),
			"--leader-elect=false",
			// Each controller with its own ServiceAccount's token, as kubeadm
			// runs them, so that RBAC holds each to its bootstrap role.
			"--use-service-account-credentials=true",
			"--service-account-private-key-file=" + filepath.Join(pkiDir, "sa.key"),
			"--root-ca-file=" + filepath.Join(pkiDir, "ca.crt"),
			"--controllers=" + strings.Join(clusterControllers, ","),
		})
	if err != nil {
		return err
	}
	// Both serve /healthz with a self-signed certificate of their own.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe only
	}}
	if err := waitHealthy(ctx, c.scheduler, client, loopbackURL("https", schedPort)+"/healthz"); err != nil {
		return err
	}
	return waitHealthy(ctx, c.controllerManager, client, loopbackURL("https", kcmPort)+"/healthz")
}

// stopClusterLocked stops kube-controller-manager and kube-scheduler.
// c.mu is held.
func (c *ControlPlane) stopClusterLocked() {
	c.controllerManager.stop(apiserverStopGrace)
	c.scheduler.stop(apiserverStopGrace)
}

// CACert returns the cluster CA's certificate (PEM): what nodes trust the
// API server by and what the API server checks client certificates with.
func (c *ControlPlane) CACert() []byte { return append([]byte(nil), c.pki.caCert...) }

// CertPool returns the cluster CA as a pool, for clients of the API server.
func (c *ControlPlane) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pki.caCert)
	return pool
}

// APIPort returns the API server's port (on every address with
// Options.Cluster, else on loopback only).
func (c *ControlPlane) APIPort() int { return c.apiPort }

// NodeKubeconfig returns a kubeconfig for the kubelet of node name: a client
// certificate for system:node:<name> in system:nodes, which the Node
// authorizer and NodeRestriction hold to that node, for the API server at
// server (an address the node reaches it by).
func (c *ControlPlane) NodeKubeconfig(name, server string) ([]byte, error) {
	user := "system:node:" + name
	cert, key, err := c.pki.clientCert(user, "system:nodes")
	if err != nil {
		return nil, err
	}
	cfg := kubeconfigFor(server, c.pki.caCert, user, cert, key, "")
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the kubeconfig of node %s: %w", name, err)
	}
	return data, nil
}

// kubeconfigFor is a single-context kubeconfig with either a client
// certificate or a token.
func kubeconfigFor(host string, ca []byte, user string, cert, key []byte, token string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testbed"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key, Token: token}
	cfg.Contexts["testbed"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: user}
	cfg.CurrentContext = "testbed"
	return cfg
}
