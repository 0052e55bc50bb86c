package kubenode

import "fmt"

// kubeletConfig is the kubelet's configuration file: a kubelet as a kubeadm
// node runs it (webhook authentication and authorization of its API, the
// cluster CA for client certificates, containerd's CRI socket), with what
// this bed's shared host asks for (see the package's doc): cgroup v1
// through the cgroupfs driver, and neither image garbage collection nor
// disk-pressure eviction, which would count the host's disk, shared by every
// node, and remove images a test's pods run (pulled again, but a pull in the
// middle of a drain or reboot would only add time). The
// kubelet decodes it strictly: an unknown field stops it.
func kubeletConfig(c Config) (string, error) {
	if c.Name == "" {
		return "", fmt.Errorf("configuring the kubelet: no node name")
	}
	return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://` + ContainerdSocket + `
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
readOnlyPort: 0
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 1Mi
  nodefs.available: 0%
  imagefs.available: 0%
nodeStatusUpdateFrequency: 4s
serializeImagePulls: false
`, nil
}
