package osupdate

import (
	"reflect"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

const digest = "sha256:e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f"

func TestRebaseArgs(t *testing.T) {
	img := "quay.io/openshift/os@" + digest
	tests := []struct {
		url, want, err string
	}{
		{img, "ostree-unverified-registry:" + img, ""},
		{"  " + img, "", "white space"},
		{img + "\n", "", "control character U+000A"},
		{"--help", "", "starts with -"},
		{"ostree-unverified-registry:--help", "", "bad image name"},
		{"ostree-unverified-image:oci:-x", "", "bad image name"},
		{"quay.io/OS@" + digest, "", "bad path component"},
		{"quay.io/os:bad!tag", "", "bad tag"},
		{"quay.io/os@sha256:", "", "bad digest"},
		{"bad_host.io:x/os", "", "bad registry host"},
		{"quay.io/os\u202e", "", "bidirectional control"},
		{"localhost:5000/os:1.2", "ostree-unverified-registry:localhost:5000/os:1.2", ""},
		{"ostree-remote-registry:-x:" + img, "", "bad ostree remote"},
		{"docker://" + img, "ostree-unverified-registry:" + img, ""},
		{"registry:" + img, "ostree-unverified-registry:" + img, ""},
		{"oci:/var/lib/os-image", "ostree-unverified-image:oci:/var/lib/os-image", ""},
		{"oci-archive:/tmp/os.tar", "ostree-unverified-image:oci-archive:/tmp/os.tar", ""},
		{"containers-storage:localhost/os", "ostree-unverified-image:containers-storage:localhost/os", ""},
		{"ostree-unverified-registry:" + img, "ostree-unverified-registry:" + img, ""},
		{"ostree-unverified-image:docker://" + img, "ostree-unverified-registry:" + img, ""},
		{"ostree-unverified-image:registry:" + img, "ostree-unverified-registry:" + img, ""},
		{"ostree-unverified-image:oci:/srv/os", "ostree-unverified-image:oci:/srv/os", ""},
		{"ostree-remote-registry:fedora:" + img, "ostree-remote-registry:fedora:" + img, ""},
		{"ostree-remote-image:fedora:docker://" + img, "ostree-remote-registry:fedora:" + img, ""},
		{"ostree-remote-image:fedora:oci:/srv/os", "ostree-remote-image:fedora:oci:/srv/os", ""},
		{"ostree-image-signed:docker://" + img, "ostree-image-signed:registry:" + img, ""},
		{"ostree-image-signed:" + img, "", "no transport"},
		{"ostree-remote-registry:" + "fedora", "", "want ostree-remote-registry:<remote>:<image>"},
		{"ostree-remote-image::docker://" + img, "", "bad ostree remote"},
		{"", "", "empty image reference"},
		{"quay.io/os with space", "", "white space"},
		{"docker://", "", "bad image name"},
	}
	for _, tt := range tests {
		got, err := RebaseArgs(tt.url)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("RebaseArgs(%q) error %v, want %q", tt.url, err, tt.err)
			}
			continue
		}
		want := []string{"rebase", "--experimental", "--", tt.want}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("RebaseArgs(%q) = %q, %v; want %q", tt.url, got, err, want)
		}
	}
}

func TestKargsArgs(t *testing.T) {
	tests := []struct {
		name           string
		removed, added []string
		want           []string
	}{
		{"nothing", nil, nil, nil},
		{"add one", nil, []string{"nosmt"}, []string{"kargs", "--append=nosmt"}},
		{"remove one", []string{"nosmt"}, nil, []string{"kargs", "--delete-if-present=nosmt"}},
		{"add and remove, in order", []string{"b", "a=1"}, []string{"z", "c=2"},
			[]string{"kargs", "--delete-if-present=b", "--delete-if-present=a=1", "--append=z", "--append=c=2"}},
		{"duplicates kept", []string{"x", "x"}, []string{"console=tty0", "console=ttyS0,115200n8", "console=tty0"},
			[]string{"kargs", "--delete-if-present=x", "--delete-if-present=x",
				"--append=console=tty0", "--append=console=ttyS0,115200n8", "--append=console=tty0"}},
		{"quoted value kept as one argument", nil, []string{`dyndbg="file drivers/usb/* +p"`},
			[]string{"kargs", `--append=dyndbg="file drivers/usb/* +p"`}},
		{"empty value", []string{"quiet="}, []string{"rd.break="}, []string{"kargs", "--delete-if-present=quiet=", "--append=rd.break="}},
	}
	for _, tt := range tests {
		if got := KargsArgs(tt.removed, tt.added); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: KargsArgs = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSwitchArgs(t *testing.T) {
	img := "quay.io/fedora/fedora-bootc@" + digest
	tests := []struct {
		url  string
		want []string
		err  string
	}{
		{img, []string{"switch", "--", img}, ""},
		{"docker://" + img, []string{"switch", "--", img}, ""},
		{"ostree-unverified-registry:" + img, []string{"switch", "--", img}, ""},
		{"oci:/var/lib/os", []string{"switch", "--transport", "oci", "--", "/var/lib/os"}, ""},
		{"containers-storage:localhost/os", []string{"switch", "--transport", "containers-storage", "--", "localhost/os"}, ""},
		{"ostree-image-signed:registry:" + img, []string{"switch", "--enforce-container-sigpolicy", "--", img}, ""},
		{"--help", nil, "starts with -"},
		{"ostree-remote-registry:fedora:" + img, nil, "cannot verify images with an ostree remote"},
	}
	for _, tt := range tests {
		got, err := SwitchArgs(tt.url)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("SwitchArgs(%q) error %v, want %q", tt.url, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SwitchArgs(%q) = %q, %v; want %q", tt.url, got, err, tt.want)
		}
	}
}

func TestApplyKargs(t *testing.T) {
	base := []string{"rw", "root=LABEL=root", "console=tty0", "console=ttyS0", "a", "a"}
	tests := []struct {
		name           string
		removed, added []string
		want           []string
	}{
		{"append", nil, []string{"nosmt", "a"}, []string{"rw", "root=LABEL=root", "console=tty0", "console=ttyS0", "a", "a", "nosmt", "a"}},
		{"delete one of two equal", []string{"a"}, nil, []string{"rw", "root=LABEL=root", "console=tty0", "console=ttyS0", "a"}},
		{"delete by key=value", []string{"console=ttyS0"}, nil, []string{"rw", "root=LABEL=root", "console=tty0", "a", "a"}},
		{"key with several values is left", []string{"console"}, nil, base},
		{"key with one value", []string{"root"}, nil, []string{"rw", "console=tty0", "console=ttyS0", "a", "a"}},
		{"absent is ignored", []string{"nosmt"}, nil, base},
	}
	for _, tt := range tests {
		if got := ApplyKargs(base, tt.removed, tt.added); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: ApplyKargs = %q, want %q", tt.name, got, tt.want)
		}
	}
	if !SameKargs([]string{"a", "b", "a"}, []string{"a", "a", "b"}) || SameKargs([]string{"a", "b"}, []string{"a", "a", "b"}) {
		t.Error("SameKargs compares multisets")
	}
}

// The kargs command line for a config pair: the configs' diff, removed
// then added, in the configs' order, duplicates and quotes kept.
func TestKargsCommandForConfigs(t *testing.T) {
	tests := []struct {
		name             string
		current, desired []string
		want             string
	}{
		{"none to one", nil, []string{"nosmt"}, "kargs --append=nosmt"},
		{"one to none", []string{"nosmt"}, nil, "kargs --delete-if-present=nosmt"},
		// A new order is a change: every argument deleted, every one
		// appended, as upstream's generateKargs.
		{"reordered", []string{"a", "b=1"}, []string{"b=1", "a"}, "kargs --delete-if-present=a --delete-if-present=b=1 --append=b=1 --append=a"},
		{"unchanged", []string{"a", "b=1"}, []string{"a", "b=1"}, ""},
		{"value changed", []string{"hugepages=1"}, []string{"hugepages=2"}, "kargs --delete-if-present=hugepages=1 --append=hugepages=2"},
		{"key to key=value", []string{"quiet"}, []string{"quiet=1"}, "kargs --delete-if-present=quiet --append=quiet=1"},
		{"one more duplicate", []string{"console=tty0"}, []string{"console=tty0", "console=tty0"}, "kargs --append=console=tty0"},
		{"one duplicate less", []string{"x", "x", "x"}, []string{"x"}, "kargs --delete-if-present=x --delete-if-present=x"},
		{"several, new order", []string{"a", "b", "c"}, []string{"c", "e", "d", "a"},
			"kargs --delete-if-present=a --delete-if-present=b --delete-if-present=c --append=c --append=e --append=d --append=a"},
		{"several appended", []string{"a", "b", "c"}, []string{"a", "c", "e", "d"}, "kargs --delete-if-present=b --append=e --append=d"},
		{"quoted value", []string{`dyndbg="a b"`}, []string{`dyndbg="a c"`}, `kargs --delete-if-present=dyndbg="a b" --append=dyndbg="a c"`},
		{"entry with several arguments", nil, []string{`a=1 b="x y"`}, `kargs --append=a=1 --append=b="x y"`},
	}
	for _, tt := range tests {
		cur, err := plan.Parse(kargsMC("cur", tt.current))
		if err != nil {
			t.Fatal(err)
		}
		des, err := plan.Parse(kargsMC("des", tt.desired))
		if err != nil {
			t.Fatal(err)
		}
		d, err := plan.Compare(cur, des)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(KargsArgs(d.KernelArgsRemoved, d.KernelArgsAdded), " "); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func kargsMC(name string, kargs []string) *mcfgv1.MachineConfig {
	mc := &mcfgv1.MachineConfig{}
	mc.Name = name
	mc.Spec.KernelArguments = kargs
	return mc
}
