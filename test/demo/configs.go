package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// fragment is one MachineConfig an administrator writes and applies with
// kubectl: the controller renders its pool's fragments into a rendered
// config and hands it to the pool's nodes.
type fragment struct{ file, yaml string }

const (
	mirrorFile  = "/etc/containerd/certs.d/registry.example.com/hosts.toml"
	mirrorYAML  = "server = \"https://registry.example.com\"\n\n[host.\"https://mirror.example.com\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
	infraFile   = "/etc/containerd/certs.d/infra.example.com/hosts.toml"
	infraYAML   = "server = \"https://infra.example.com\"\n"
	etcFile     = "/etc/nodeconfd-demo.conf"
	etcContent  = "# written by nodeconfd\ngreeting = hello\n"
	unitName    = "nodeconfd-demo.service"
	unitContent = "[Unit]\nDescription=nodeconfd demo unit\n\n[Service]\nType=oneshot\nExecStart=/bin/true\nRemainAfterExit=yes\n\n[Install]\nWantedBy=multi-user.target\n"
)

// The demo's fragments, in the order it applies them.
var (
	// A registry host file of containerd, the nodes' runtime: containerd
	// reads it at each pull, so no drain, no reboot, no restart.
	mirrorFragment = fragment{"99-worker-mirror.yaml", machineConfig("99-worker-mirror", "worker", map[string]string{mirrorFile: mirrorYAML}, "")}
	// The infra pool's own fragment; its nodes take the worker fragments
	// too.
	infraFragment = fragment{"99-infra-mirror.yaml", machineConfig("99-infra-mirror", "infra", map[string]string{infraFile: infraYAML}, "")}
	// A systemd unit and an /etc file: drain and reboot.
	unitFragment = fragment{"99-worker-demo-unit.yaml", machineConfig("99-worker-demo-unit", "worker", map[string]string{etcFile: etcContent},
		"    systemd:\n      units:\n      - name: "+unitName+"\n        enabled: true\n        contents: "+quoteYAML(unitContent)+"\n")}
)

// infraPool is a custom pool as the OpenShift documentation makes one.
var infraPool = fragment{"infra-pool.yaml", testbed.CustomPoolYAML("infra")}

// machineConfig is a MachineConfig of role writing files, and systemd
// (already indented under spec.config) when not empty.
func machineConfig(name, role string, files map[string]string, systemd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: %s\n"+
		"  labels:\n    machineconfiguration.openshift.io/role: %s\nspec:\n  config:\n    ignition: {version: 3.4.0}\n"+
		"    storage:\n      files:\n", name, role)
	for path, content := range files {
		fmt.Fprintf(&b, "      - path: %s\n        mode: 420\n        contents: {source: \"data:,%s\"}\n", path,
			url.PathEscape(content))
	}
	b.WriteString(systemd)
	return b.String()
}

// quoteYAML quotes s as a YAML double-quoted scalar.
func quoteYAML(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
