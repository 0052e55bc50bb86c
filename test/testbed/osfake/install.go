package osfake

import (
	"fmt"
	"os"
	"path/filepath"
)

// Options choose what a node gets.
type Options struct {
	// RpmOstree and Bootc install the fake as those tools.
	RpmOstree, Bootc bool
	// Image is the booted deployment's image reference, as rpm-ostree
	// reports it (e.g. "ostree-unverified-registry:quay.io/os@sha256:...").
	Image string
	// Kargs are the booted deployment's kernel arguments.
	Kargs []string
}

// BootUnit finalizes a staged deployment at boot.
const BootUnit = "nodeconfd-osfake-boot.service"

const bootUnit = `[Unit]
Description=Fake ostree boot: finalize the staged deployment (nodeconfd test bed)
DefaultDependencies=no
After=local-fs.target
Before=sysinit.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=` + Binary + ` boot

[Install]
WantedBy=sysinit.target
`

// Install puts the fake program (built at binary) into the node root
// root, as the tools opts names, with its boot unit and a booted
// deployment of opts.Image. It runs before the node's first boot.
func Install(root, binary string, opts Options) error {
	data, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("reading the fake OS tools %s: %w", binary, err)
	}
	dst := filepath.Join(root, Binary)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		return err
	}
	var tools []string
	if opts.RpmOstree {
		tools = append(tools, "rpm-ostree")
	}
	if opts.Bootc {
		tools = append(tools, "bootc")
	}
	for _, t := range tools {
		link := filepath.Join(root, "usr/bin", t)
		_ = os.Remove(link)
		if err := os.Symlink("../libexec/"+filepath.Base(Binary), link); err != nil {
			return err
		}
	}
	unitDir := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(filepath.Join(unitDir, "sysinit.target.wants"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(unitDir, BootUnit), []byte(bootUnit), 0o644); err != nil {
		return err
	}
	if err := os.Symlink("../"+BootUnit, filepath.Join(unitDir, "sysinit.target.wants", BootUnit)); err != nil && !os.IsExist(err) {
		return err
	}
	// The daemon reads the root mount from outside the node, where the
	// node's /run tmpfs is not seen: mark the host ostree-booted there too.
	if err := os.WriteFile(filepath.Join(root, "run/ostree-booted"), nil, 0o644); err != nil {
		return err
	}
	f := &fake{root: root, state: State{OSName: "fedora-coreos"}}
	d := f.newDeployment(Deployment{}, opts.Image, opts.Kargs)
	d.Staged = false
	f.state.Deployments = []Deployment{d}
	return f.save()
}
