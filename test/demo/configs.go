package main

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// config is one rendered MachineConfig of the demo.
type config struct{ name, ignition string }

const (
	mirrorFile  = "/etc/containers/registries.d/mirror.yaml"
	mirrorYAML  = "docker:\n  registry.example.com:\n    lookaside: https://sigs.example.com\n"
	etcFile     = "/etc/nodeconfd-demo.conf"
	etcContent  = "# written by nodeconfd from rendered-worker-3\ngreeting = hello\n"
	unitName    = "nodeconfd-demo.service"
	unitContent = "[Unit]\nDescription=nodeconfd demo unit\n\n[Service]\nType=oneshot\nExecStart=/bin/true\nRemainAfterExit=yes\n\n[Install]\nWantedBy=multi-user.target\n"
)

// demoConfigs returns the base the node starts at, update 1 and update 2,
// each built on the one before.
func demoConfigs() []config {
	return []config{
		{"rendered-worker-0", ignition(nil, "")},
		{"rendered-worker-1", ignition(map[string]string{mirrorFile: mirrorYAML}, "")},
		{"rendered-worker-3", ignition(map[string]string{mirrorFile: mirrorYAML, etcFile: etcContent},
			fmt.Sprintf(`"systemd":{"units":[{"name":%q,"enabled":true,"contents":%q}]}`, unitName, unitContent))},
	}
}

// ignition builds an Ignition 3.4 config from files (path → contents) and
// an optional extra top-level member.
func ignition(files map[string]string, extra string) string {
	var fs []string
	for p, c := range files {
		fs = append(fs, fmt.Sprintf(`{"path":%q,"mode":420,"overwrite":true,"contents":{"source":"data:;base64,%s"}}`,
			p, base64.StdEncoding.EncodeToString([]byte(c))))
	}
	parts := []string{`"ignition":{"version":"3.4.0"}`, `"storage":{"files":[` + strings.Join(fs, ",") + `]}`}
	if extra != "" {
		parts = append(parts, extra)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
