package plan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// hostileFile is a storage file entry with the given path, as JSON.
func hostileFile(path string) string {
	p, _ := json.Marshal(path)
	return `{"path":` + string(p) + `,"contents":{"source":"data:,x"}}`
}

// hostileConfig is an Ignition config with the files, units (JSON) and
// SSH keys of core.
func hostileConfig(files, units []string, keys bool) string {
	body := `"storage":{"files":[` + strings.Join(files, ",") + `]},"systemd":{"units":[` + strings.Join(units, ",") + `]}`
	if keys {
		body += `,"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA k"]}]}`
	}
	return ignitionJSON("3.5.0", body)
}

// hostileCase is a config that passes Ignition's validation but that the
// daemon must refuse in prepare, naming field.
type hostileCase struct {
	name        string
	files       []string
	units       []string
	keys        bool
	kargs       []string
	image       string
	extensions  []string
	kernelType  string
	field, part string
}

// hostilePathCases are the storage file paths.
func hostilePathCases() []hostileCase {
	long := strings.Repeat("a", 256)
	unit := func(name, rest string) string { return `{"name":"` + name + `"` + rest + `}` }
	dropin := `,"dropins":[{"name":"10-x.conf","contents":"[Service]\n"}]`
	f := hostileFile
	return []hostileCase{
		// Paths: pseudo file systems, the daemon's state, characters, lengths.
		{name: "proc", files: []string{f("/etc/ok"), f("/proc/sys/kernel/sysrq")}, field: "spec.config.storage.files[1].path", part: "pseudo file system"},
		{name: "sys", files: []string{f("/sys/kernel/mm/x")}, field: "spec.config.storage.files[0].path", part: "/sys"},
		{name: "dev", files: []string{f("/dev")}, field: "spec.config.storage.files[0].path", part: "/dev"},
		{name: "dev sda", files: []string{f("/dev/sda")}, field: "spec.config.storage.files[0].path", part: "/dev"},
		{name: "state dir", files: []string{f("/var/lib/nodeconfd")}, field: "spec.config.storage.files[0].path", part: "state folder"},
		{name: "state journal", files: []string{f("/var/lib/nodeconfd/txn/1/journal")}, field: "spec.config.storage.files[0].path", part: "state folder"},
		{name: "run", files: []string{f("/run/x")}, field: "spec.config.storage.files[0].path", part: "emptied at every boot"},
		{name: "var run", files: []string{f("/var/run/x")}, field: "spec.config.storage.files[0].path", part: "emptied at every boot"},
		{name: "sysroot", files: []string{f("/sysroot/ostree/deploy/x")}, field: "spec.config.storage.files[0].path", part: "ostree"},
		{name: "ostree", files: []string{f("/ostree/repo/config")}, field: "spec.config.storage.files[0].path", part: "ostree"},
		{name: "NUL", files: []string{f("/etc/a\x00b")}, field: "spec.config.storage.files[0].path", part: "U+0000"},
		{name: "newline", files: []string{f("/etc/a\nb")}, field: "spec.config.storage.files[0].path", part: "U+000A"},
		{name: "escape", files: []string{f("/etc/\x1b[2Jx")}, field: "spec.config.storage.files[0].path", part: "U+001B"},
		{name: "DEL", files: []string{f("/etc/a\x7f")}, field: "spec.config.storage.files[0].path", part: "U+007F"},
		{name: "C1", files: []string{f("/etc/a\u009b")}, field: "spec.config.storage.files[0].path", part: "U+009B"},
		{name: "RLO", files: []string{f("/etc/cron.d/x\u202egpj.sh")}, field: "spec.config.storage.files[0].path", part: "bidirectional"},
		{name: "LRI", files: []string{f("/etc/a\u2066")}, field: "spec.config.storage.files[0].path", part: "U+2066"},
		{name: "ALM", files: []string{f("/etc/a\u061c")}, field: "spec.config.storage.files[0].path", part: "U+061C"},
		{name: "long name", files: []string{f("/etc/" + long)}, field: "spec.config.storage.files[0].path", part: "NAME_MAX"},
		{name: "long path", files: []string{f(strings.Repeat("/abcdefghijklmno", 256))}, field: "spec.config.storage.files[0].path", part: "PATH_MAX"},
		// Files that collide with other files, units or SSH keys.
		{name: "file under file", files: []string{f("/etc/a"), f("/etc/a/b")}, field: "spec.config.storage.files[1].path", part: "spec.config.storage.files[0] writes as a file"},
		{name: "file under file deep", files: []string{f("/etc/a/b/c"), f("/etc/a")}, field: "spec.config.storage.files[0].path", part: "inside /etc/a"},
		{name: "dropin folder as file", files: []string{f("/etc/systemd/system/foo.service.d")}, units: []string{unit("foo.service", dropin)},
			field: "spec.config.storage.files[0].path", part: "drop-in folder of foo.service"},
		{name: "dropin as file", files: []string{f("/etc/systemd/system/foo.service.d/10-x.conf")}, units: []string{unit("foo.service", dropin)},
			field: "spec.config.storage.files[0].path", part: "conflicts"}, // Ignition's own check
		{name: "other file in dropin folder", files: []string{f("/etc/systemd/system/foo.service.d/20-y.conf")}, units: []string{unit("foo.service", `,"enabled":true`)},
			field: "spec.config.storage.files[0].path", part: "drop-in folder"},
		{name: "unit file as file", files: []string{f("/etc/systemd/system/foo.service")}, units: []string{unit("foo.service", `,"contents":"[Service]\n"`)},
			field: "spec.config.storage.files[0].path", part: "conflicts"}, // Ignition's own check
		{name: "masked unit file as file", files: []string{f("/etc/systemd/system/foo.service")}, units: []string{unit("foo.service", `,"mask":true`)},
			field: "spec.config.storage.files[0].path", part: "is the unit file of foo.service"},
		{name: "enabled unit file as file", files: []string{f("/etc/systemd/system/foo.service")}, units: []string{unit("foo.service", `,"enabled":true`)},
			field: "spec.config.storage.files[0].path", part: "is the unit file of foo.service"},
		{name: "unit folder as file", files: []string{f("/etc/systemd/system")}, units: []string{unit("foo.service", `,"enabled":true`)},
			field: "spec.config.storage.files[0].path", part: "folder of the unit file"},
		{name: "wants link as file", files: []string{f("/etc/systemd/system/multi-user.target.wants/foo.service")}, units: []string{unit("foo.service", `,"enabled":false`)},
			field: "spec.config.storage.files[0].path", part: "links foo.service"},
		{name: "authorized_keys", files: []string{f("/home/core/.ssh/authorized_keys")}, keys: true,
			field: "spec.config.storage.files[0].path", part: "is core's SSH keys (spec.config.passwd.users[0].sshAuthorizedKeys)"},
		{name: "var authorized_keys", files: []string{f("/var/home/core/.ssh/authorized_keys")},
			field: "spec.config.storage.files[0].path", part: "core's SSH keys"},
		{name: "ssh folder as file", files: []string{f("/home/core/.ssh")}, keys: true, field: "spec.config.storage.files[0].path", part: "folder of core's SSH keys"},
		{name: "home as file", files: []string{f("/home/core")}, keys: true, field: "spec.config.storage.files[0].path", part: "folder"},
	}
}

// hostileUnitOSCases are the units, images, kernel arguments and OS fields.
func hostileUnitOSCases() []hostileCase {
	unit := func(name, rest string) string { return `{"name":"` + name + `"` + rest + `}` }
	dropin := `,"dropins":[{"name":"10-x.conf","contents":"[Service]\n"}]`
	return []hostileCase{
		// Units and drop-ins.
		{name: "unit name too long", units: []string{unit(strings.Repeat("u", 248)+".service", "")}, field: "spec.config.systemd.units[0].name", part: "at most 255"},
		{name: "dropin folder too long", units: []string{unit(strings.Repeat("u", 246)+".service", dropin)}, field: "spec.config.systemd.units[0].name", part: "drop-in folder"},
		{name: "dropin name too long", units: []string{unit("a.service", `,"dropins":[{"name":"`+strings.Repeat("d", 251)+`.conf","contents":""}]`)},
			field: "spec.config.systemd.units[0].dropins[0].name", part: "NAME_MAX"},
		{name: "dropin newline", units: []string{unit("a.service", `,"dropins":[{"name":"a\nb.conf","contents":""}]`)},
			field: "spec.config.systemd.units[0].dropins[0].name", part: "U+000A"},
		{name: "dropin bidi", units: []string{unit("a.service", `,"dropins":[{"name":"a\u202eb.conf","contents":""}]`)},
			field: "spec.config.systemd.units[0].dropins[0].name", part: "bidirectional"},
		{name: "dropin escape", units: []string{unit("a.service", `,"dropins":[{"name":"\u001b]0;x.conf","contents":""}]`)},
			field: "spec.config.systemd.units[0].dropins[0].name", part: "U+001B"},
		{name: "snapshot unit", units: []string{unit("a.snapshot", "")}, field: "spec.config.systemd.units[0].name", part: "unit type"},
		{name: "masked with contents", units: []string{unit("a.service", `,"mask":true,"contents":"[Service]\n"`)}, field: "spec.config.systemd.units[0].mask", part: "masked and has contents"},
		{name: "template enabled", units: []string{unit("a@.service", `,"enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"`)},
			field: "spec.config.systemd.units[0].enabled", part: "template"},
		// OS image references.
		{name: "image option", image: "--help", field: "spec.osImageURL", part: "starts with -"},
		{name: "image option after prefix", image: "ostree-unverified-registry:--apply", field: "spec.osImageURL", part: "bad image name"},
		{name: "image oci option", image: "ostree-unverified-image:oci:-x", field: "spec.osImageURL", part: "bad image name"},
		{name: "image newline", image: "quay.io/os:1\n--apply", field: "spec.osImageURL", part: "U+000A"},
		{name: "image space", image: "quay.io/os:1 --apply", field: "spec.osImageURL", part: "white space"},
		{name: "image leading space", image: " quay.io/os:1", field: "spec.osImageURL", part: "white space"},
		{name: "image bidi", image: "quay.io/os\u202e:1", field: "spec.osImageURL", part: "bidirectional"},
		{name: "image upper case", image: "quay.io/OS:1", field: "spec.osImageURL", part: "path component"},
		{name: "image bad tag", image: "quay.io/os:-1", field: "spec.osImageURL", part: "bad tag"},
		{name: "image bad digest", image: "quay.io/os@sha256", field: "spec.osImageURL", part: "bad digest"},
		{name: "image bad remote", image: "ostree-remote-registry:-x:quay.io/os:1", field: "spec.osImageURL", part: "ostree remote"},
		// Kernel arguments.
		{name: "karg NUL", kargs: []string{"quiet", "a\x00b"}, field: "spec.kernelArguments[1]", part: "U+0000"},
		{name: "karg CR", kargs: []string{"a\rb"}, field: "spec.kernelArguments[0]", part: "U+000D"},
		{name: "karg VT", kargs: []string{"a\vb"}, field: "spec.kernelArguments[0]", part: "U+000B"},
		{name: "karg FF", kargs: []string{"a\fb"}, field: "spec.kernelArguments[0]", part: "U+000C"},
		{name: "karg DEL", kargs: []string{"a\x7f"}, field: "spec.kernelArguments[0]", part: "U+007F"},
		{name: "karg C1", kargs: []string{"a\u0085"}, field: "spec.kernelArguments[0]", part: "U+0085"},
		{name: "karg quoted newline", kargs: []string{"a=\"x\ny\""}, field: "spec.kernelArguments[0]", part: "U+000A"},
		{name: "karg dash", kargs: []string{"quiet -- init=/bin/sh"}, field: "spec.kernelArguments[0]", part: "starts with -"},
		{name: "karg option", kargs: []string{"--help"}, field: "spec.kernelArguments[0]", part: "starts with -"},
		{name: "karg ostree", kargs: []string{"ostree=/ostree/boot.1/x"}, field: "spec.kernelArguments[0]", part: "ostree="},
		{name: "karg BOOT_IMAGE", kargs: []string{"quiet BOOT_IMAGE=/vmlinuz"}, field: "spec.kernelArguments[0]", part: "BOOT_IMAGE="},
		{name: "karg BOOT-IMAGE", kargs: []string{"BOOT-IMAGE=/vmlinuz"}, field: "spec.kernelArguments[0]", part: "own"},
		{name: "karg initrd", kargs: []string{"initrd=/x"}, field: "spec.kernelArguments[0]", part: "initrd="},
		{name: "karg root", kargs: []string{"root=/dev/sdb"}, field: "spec.kernelArguments[0]", part: "root="},
		{name: "karg init", kargs: []string{`"init=/bin/sh"`}, field: "spec.kernelArguments[0]", part: "init="},
		{name: "karg empty key", kargs: []string{"=x"}, field: "spec.kernelArguments[0]", part: "empty key"},
		{name: "karg too long", kargs: []string{strings.Repeat("x", 1000), strings.Repeat("y", 1048)}, field: "spec.kernelArguments", part: "2049 bytes"},
		// Extensions and kernel type.
		{name: "unknown extension", extensions: []string{"usbguard", "--nogpgcheck"}, field: "spec.extensions[1]", part: "unknown extension"},
		{name: "unknown kernel type", kernelType: "rt", field: "spec.kernelType", part: "unknown kernel type"},
	}
}

// Every hostile config is refused when parsed, naming object and field.
func TestParseRefusesHostile(t *testing.T) {
	for _, tc := range append(hostilePathCases(), hostileUnitOSCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			mc := machineConfig("rendered-hostile", hostileConfig(tc.files, tc.units, tc.keys))
			mc.Spec.KernelArguments, mc.Spec.OSImageURL = tc.kargs, tc.image
			mc.Spec.Extensions, mc.Spec.KernelType = tc.extensions, tc.kernelType
			_, err := Parse(mc)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Parse error = %v, want a *ConfigError", err)
			}
			if ce.Object != "rendered-hostile" || ce.Field != tc.field || !strings.Contains(ce.Msg, tc.part) {
				t.Errorf("Parse error = %v, want field %s and %q", err, tc.field, tc.part)
			}
		})
	}
}

// What is near a refusal but legal is accepted: the checks refuse no more
// than they must.
func TestParseAcceptsNearHostile(t *testing.T) {
	name255 := strings.Repeat("n", 255)
	files := []string{hostileFile("/etc/" + name255), hostileFile("/device/x"), hostileFile("/var/lib/nodeconfd-other/x"), hostileFile("/runner/x"), hostileFile("/var/lib/ostree-x"),
		hostileFile("/etc/systemd/system/bar.service"), hostileFile("/etc/systemd/system/foo.service.d2/x"),
		hostileFile("/home/core/.ssh/config"), hostileFile("/etc/a"), hostileFile("/etc/ab/c"), hostileFile("/etc/caf\u00e9")}
	units := []string{`{"name":"foo.service","dropins":[{"name":"10-x.conf","contents":"[Service]\n"}]}`,
		`{"name":"` + strings.Repeat("u", 245) + `.service","dropins":[{"name":"10-x.conf","contents":""}]}`,
		`{"name":"` + strings.Repeat("v", 247) + `.service"}`,
		`{"name":"getty@.service","enabled":true}`,
		`{"name":"b@.service","enabled":true,"contents":"[Install]\nDefaultInstance=x\nWantedBy=multi-user.target\n"}`,
		`{"name":"c.service","mask":true}`}
	mc := machineConfig("rendered-ok", hostileConfig(files, units, true))
	mc.Spec.KernelArguments = []string{"console=ttyS0,115200n8 nosmt", `dyndbg="file drivers/usb/* +p"`, "rd.break", "rootdelay=3", "bootdelay=1",
		"a=-1", strings.Repeat("x", 2048-len("console=ttyS0,115200n8 nosmt dyndbg=\"file drivers/usb/* +p\" rd.break rootdelay=3 bootdelay=1 a=-1 "))}
	mc.Spec.OSImageURL = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("0", 64)
	mc.Spec.Extensions = []string{"usbguard", "kernel-devel"}
	mc.Spec.KernelType = "realtime"
	if _, err := Parse(mc); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for _, img := range []string{"localhost:5000/os:1.2", "[::1]:5000/os", "oci:/var/lib/os:latest", "ostree-remote-registry:fedora:quay.io/fedora/os:41",
		"containers-storage:[overlay@/var/lib/containers]quay.io/os"} {
		if _, err := ParseImage(img); err != nil {
			t.Errorf("ParseImage(%q): %v", img, err)
		}
	}
}

// Invalid UTF-8 cannot come through JSON (it decodes to U+FFFD), but other
// callers of the checks may pass it.
func TestCheckTextInvalidUTF8(t *testing.T) {
	for _, s := range []string{"/etc/a\xff", "/etc/\xc3"} {
		if msg := checkPath(s); !strings.Contains(msg, "UTF-8") {
			t.Errorf("checkPath(%q) = %q", s, msg)
		}
	}
	if msg := checkKernelArg("a\xff"); !strings.Contains(msg, "UTF-8") {
		t.Errorf("checkKernelArg = %q", msg)
	}
}
