package kubenode

import (
	"net/netip"
	"strings"
	"testing"
)

func testConfig() Config {
	return Config{
		Name: "kube-a", IP: netip.MustParseAddr("10.250.7.2"), Gateway: netip.MustParseAddr("10.250.7.1"), PrefixLen: 24,
		APIPort: 40123, PodCIDR: netip.MustParsePrefix("10.244.3.0/24"), CACert: []byte("CA"), Kubeconfig: []byte("KC"),
		SandboxImage: "10.250.7.1:5000/testbed/pause:1", Registry: "10.250.7.1:5000",
	}
}

func TestFilesRefusesIncompleteConfig(t *testing.T) {
	for name, edit := range map[string]func(*Config){
		"no name":     func(c *Config) { c.Name = "" },
		"no IP":       func(c *Config) { c.IP = netip.Addr{} },
		"no gateway":  func(c *Config) { c.Gateway = netip.Addr{} },
		"no API port": func(c *Config) { c.APIPort = 0 },
		"no pod CIDR": func(c *Config) { c.PodCIDR = netip.Prefix{} },
		"no registry": func(c *Config) { c.Registry = "" },
	} {
		c := testConfig()
		edit(&c)
		if _, err := Files(c); err == nil {
			t.Errorf("%s: Files accepted %+v", name, c)
		}
	}
}

func TestFiles(t *testing.T) {
	files, err := Files(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]string{
		"/usr/local/sbin/testbed-node-setup": {"ip addr replace 10.250.7.2/24 dev host0", "ip route replace default via 10.250.7.1",
			"mount -o remount,bind,rw"},
		"/etc/testbed/kube-proxy.nft": {"ip daddr 10.0.0.1 tcp dport 443 dnat to 10.250.7.1:40123"},
		"/etc/containerd/config.toml": {`sandbox = "10.250.7.1:5000/testbed/pause:1"`, `snapshotter = "native"`,
			"SystemdCgroup = false", `config_path = "/etc/containerd/certs.d"`},
		"/etc/containerd/certs.d/10.250.7.1:5000/hosts.toml": {`server = "http://10.250.7.1:5000"`,
			`[host."http://10.250.7.1:5000"]`, `capabilities = ["pull", "resolve"]`},
		"/etc/cni/net.d/10-testbed.conflist":     {`"subnet": "10.244.3.0/24"`, `"gateway": "10.244.3.1"`},
		"/etc/systemd/system/kubelet.service":    {"--node-ip=10.250.7.2", "--hostname-override=kube-a"},
		"/var/lib/kubelet/config.yaml":           {"cgroupDriver: cgroupfs", "failCgroupV1: false", "clientCAFile: /etc/kubernetes/pki/ca.crt"},
		"/etc/kubernetes/kubelet.kubeconfig":     {"KC"},
		"/etc/kubernetes/pki/ca.crt":             {"CA"},
		"/etc/systemd/system/containerd.service": {BinDir + "/containerd"},
	} {
		f, ok := files[path]
		if !ok {
			t.Errorf("no %s", path)
			continue
		}
		for _, w := range want {
			if !strings.Contains(f.Data, w) {
				t.Errorf("%s lacks %q:\n%s", path, w, f.Data)
			}
		}
	}
	if m := files["/etc/kubernetes/kubelet.kubeconfig"].Mode; m != 0o600 {
		t.Errorf("the kubelet's kubeconfig (its key) has mode %o, want 600", m)
	}
	// Every image is pulled from the registry: no unit imports archives.
	for path, f := range files {
		if strings.Contains(f.Data, "images import") {
			t.Errorf("%s imports images into containerd", path)
		}
	}
	for _, unit := range []string{"testbed-node", "containerd", "kubelet"} {
		if l := files["/etc/systemd/system/multi-user.target.wants/"+unit+".service"].Link; l != "/etc/systemd/system/"+unit+".service" {
			t.Errorf("%s.service is not enabled (link %q)", unit, l)
		}
	}
}
