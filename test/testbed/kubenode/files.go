// Package kubenode configures a test node (package nspawn) as a real
// Kubernetes node: containerd with Debian's runc, a kubelet that registers
// the node with its own client certificate, a CNI bridge for pods, and the
// one rule of kube-proxy that the daemon needs (the kubernetes Service's
// address to the API server). Files returns every file the node needs;
// the kubelet, containerd and images come from the host, bound in read-only
// (Binds).
//
// What the bed's shared kernel cannot give each node, and how it is made up
// for, each in the node's set-up script (setupScript):
//   - Network: each node has its own network namespace on a bridge of the
//     bed (10.250.B.0/24, the host at .1); the API server listens there.
//   - cgroups: the host is a cgroup v1 (hybrid) one, whose v2 hierarchy has
//     no controllers, so the kubelet and runc use cgroup v1 (failCgroupV1:
//     false); nspawn mounts the v1 controllers read-only, which the set-up
//     remounts read-write (the node's processes are in cgroups of their own).
//   - OOM scores: nothing here holds CAP_SYS_RESOURCE, so no score goes
//     below 0; containerd raises the kubelet's negative scores to its own
//     (restrict_oom_score_adj, as on rootless nodes).
//   - Kernel sysctls: the kubelet wants vm.overcommit_memory=1,
//     kernel.panic=10 and kernel.panic_on_oops=1, which are the host's
//     (not namespaced) and are left alone; files with those values are bound
//     over the node's /proc/sys entries, so the kubelet finds them set.
package kubenode

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Paths in the node.
const (
	// BinDir is where the node stack's binaries (hack/build-nodestack.sh)
	// are bound.
	BinDir = "/opt/nodestack"
	// ContainerdSocket is containerd's CRI and API socket.
	ContainerdSocket = "/run/containerd/containerd.sock"
	// KubeletDir is the kubelet's root folder.
	KubeletDir = "/var/lib/kubelet"
)

// ServiceIP is the kubernetes Service's ClusterIP: the first address of the
// API server's --service-cluster-ip-range (package controlplane).
const ServiceIP = "10.0.0.1"

// Config describes one node.
type Config struct {
	// Name is the node's name.
	Name string
	// IP is the node's address on the bed's bridge, Gateway the host's.
	IP, Gateway netip.Addr
	// PrefixLen is the bridge network's prefix length.
	PrefixLen int
	// APIPort is the API server's port on Gateway.
	APIPort int
	// PodCIDR is the node's pod network (its CNI bridge's).
	PodCIDR netip.Prefix
	// CACert is the cluster CA (PEM); Kubeconfig the kubelet's, with its
	// own client certificate, for the API server at https://ServiceIP.
	CACert, Kubeconfig []byte
	// SandboxImage is the pause image's reference.
	SandboxImage string
	// Registry is the bed's registry, host:port, spoken to over plain HTTP
	// (its hosts.toml says so).
	Registry string
}

// Binds are the host folders the node gets read-only, host path to node
// path: the node stack's binaries.
func Binds(binDir string) map[string]string {
	return map[string]string{binDir: BinDir}
}

// Files returns the node's files, path in the node to contents and mode.
func Files(c Config) (map[string]File, error) {
	if c.Name == "" || !c.IP.IsValid() || !c.Gateway.IsValid() || c.APIPort == 0 || !c.PodCIDR.IsValid() || c.Registry == "" {
		return nil, fmt.Errorf("configuring node %q: name, IP, gateway, API port, pod CIDR and registry are required", c.Name)
	}
	kubelet, err := kubeletConfig(c)
	if err != nil {
		return nil, err
	}
	files := map[string]File{
		"/etc/kubernetes/pki/ca.crt":                {Data: string(c.CACert), Mode: 0o644},
		"/etc/kubernetes/kubelet.kubeconfig":        {Data: string(c.Kubeconfig), Mode: 0o600},
		KubeletDir + "/config.yaml":                 {Data: kubelet, Mode: 0o644},
		"/etc/containerd/config.toml":               {Data: containerdConfig(c), Mode: 0o644},
		hostsDir + "/" + c.Registry + "/hosts.toml": {Data: registryHosts(c), Mode: 0o644},
		"/etc/cni/net.d/10-testbed.conflist":        {Data: cniConfig(c), Mode: 0o644},
		"/usr/local/sbin/testbed-node-setup":        {Data: setupScript(c), Mode: 0o755},
		"/etc/testbed/kube-proxy.nft":               {Data: serviceRule(c), Mode: 0o644},
		"/etc/testbed/sysctl/overcommit":            {Data: "1\n", Mode: 0o444},
		"/etc/testbed/sysctl/panic":                 {Data: "10\n", Mode: 0o444},
		"/etc/testbed/sysctl/panic_on_oops":         {Data: "1\n", Mode: 0o444},
		"/etc/systemd/system/testbed-node.service":  {Data: setupUnit, Mode: 0o644},
		"/etc/systemd/system/containerd.service":    {Data: containerdUnit, Mode: 0o644},
		"/etc/systemd/system/kubelet.service":       {Data: kubeletUnit(c), Mode: 0o644},
	}
	for _, unit := range []string{"testbed-node", "containerd", "kubelet"} {
		files["/etc/systemd/system/multi-user.target.wants/"+unit+".service"] = File{
			Link: "/etc/systemd/system/" + unit + ".service"}
	}
	return files, nil
}

// File is one file's contents and mode, or a symbolic link to Link.
type File struct {
	Data string
	Mode uint32
	Link string
}

// setupScript prepares what the node's namespaces lack at every boot (see
// the package's doc), before containerd and the kubelet start.
func setupScript(c Config) string {
	return fmt.Sprintf(`#!/bin/sh
# The test bed's node set-up (package kubenode), at every boot.
set -eu
ip link set lo up
ip link set host0 up
ip addr replace %[1]s/%[2]d dev host0
ip route replace default via %[3]s
nft -f /etc/testbed/kube-proxy.nft
for f in vm/overcommit_memory:overcommit kernel/panic:panic kernel/panic_on_oops:panic_on_oops; do
  mount --bind "/etc/testbed/sysctl/${f#*:}" "/proc/sys/${f%%:*}"
done
# cgroup v1 controllers: nspawn mounts them read-only (the mount, not the
# hierarchy: a bind remount makes the mount writable).
if [ "$(stat -f -c %%T /sys/fs/cgroup)" = tmpfs ]; then
  for d in /sys/fs/cgroup/*; do
    case "$d" in */systemd|*/unified) continue ;; esac
    if mountpoint -q "$d"; then mount -o remount,bind,rw "$d"; fi
  done
fi
`, c.IP, c.PrefixLen, c.Gateway)
}

// serviceRule sends the kubernetes Service's address to the API server, as
// kube-proxy would, for the node's own processes (host-network pods) and
// for pods. A pod's packets leave with the node's address (masquerade, as
// kube-proxy marks them): the host has no route back to the node's pod
// network.
func serviceRule(c Config) string {
	rule := fmt.Sprintf("ip daddr %s tcp dport 443 dnat to %s:%d", ServiceIP, c.Gateway, c.APIPort)
	masq := fmt.Sprintf("ip daddr %s tcp dport %d masquerade", c.Gateway, c.APIPort)
	return fmt.Sprintf(`table ip testbed-kube-proxy
delete table ip testbed-kube-proxy
table ip testbed-kube-proxy {
	chain output {
		type nat hook output priority -100;
		%[1]s
	}
	chain prerouting {
		type nat hook prerouting priority -100;
		%[1]s
	}
	chain postrouting {
		type nat hook postrouting priority 100;
		%[2]s
	}
}
`, rule, masq)
}

const setupUnit = `[Unit]
Description=Test bed node set-up: network, kubernetes Service, sysctls, cgroups
DefaultDependencies=no
After=local-fs.target
Before=containerd.service kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/testbed-node-setup

[Install]
WantedBy=multi-user.target
`

const containerdUnit = `[Unit]
Description=containerd (test bed)
After=testbed-node.service
Requires=testbed-node.service

[Service]
Environment=PATH=` + BinDir + `:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ExecStart=` + BinDir + `/containerd --config /etc/containerd/config.toml
Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=1
LimitNOFILE=infinity

[Install]
WantedBy=multi-user.target
`

// hostsDir is containerd's registry host configuration folder
// (config_path), one folder per registry host, as on real nodes.
const hostsDir = "/etc/containerd/certs.d"

// registryHosts tells containerd that the bed's registry speaks plain
// HTTP: without it, containerd speaks HTTPS to any host but localhost.
func registryHosts(c Config) string {
	return fmt.Sprintf(`server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, c.Registry)
}

func kubeletUnit(c Config) string {
	return `[Unit]
Description=kubelet (test bed)
After=containerd.service
Wants=containerd.service

[Service]
ExecStart=` + BinDir + `/kubelet --config=` + KubeletDir + `/config.yaml --kubeconfig=/etc/kubernetes/kubelet.kubeconfig --node-ip=` + c.IP.String() + ` --hostname-override=` + c.Name + `
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
`
}

func containerdConfig(c Config) string {
	return strings.ReplaceAll(`version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "`+ContainerdSocket+`"

# The node's root is an overlay, on which overlayfs cannot stack: the
# native snapshotter copies instead (the bed's images are small).
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "native"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "SANDBOX"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "`+hostsDir+`"

# Nothing on this host may lower an OOM score below 0 (the test process
# itself lacks CAP_SYS_RESOURCE), while the kubelet gives critical pods
# -997: containerd raises such scores to its own, as for rootless nodes.
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "/etc/cni/net.d"

[plugins.'io.containerd.transfer.v1.local']
  [[plugins.'io.containerd.transfer.v1.local'.unpack_config]]
    platform = "linux/amd64"
    snapshotter = "native"
`, "SANDBOX", c.SandboxImage)
}

func cniConfig(c Config) string {
	gw := c.PodCIDR.Addr().Next()
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "testbed",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
`, c.PodCIDR.String(), gw.String())
}

// Write writes files (from Files) into the node's root folder root.
func Write(root string, files map[string]File) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f := files[p]
		dst := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("writing the node's %s: %w", p, err)
		}
		var err error
		if f.Link != "" {
			_ = os.Remove(dst)
			err = os.Symlink(f.Link, dst)
		} else {
			err = os.WriteFile(dst, []byte(f.Data), os.FileMode(f.Mode))
		}
		if err != nil {
			return fmt.Errorf("writing the node's %s: %w", p, err)
		}
	}
	return nil
}
