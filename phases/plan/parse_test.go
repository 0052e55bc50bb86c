package plan

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// machineConfig returns a MachineConfig named name holding the raw Ignition config.
func machineConfig(name, raw string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(raw)}},
	}
}

// ignitionJSON wraps storage/systemd/passwd JSON fragments into a config of the version.
func ignitionJSON(version, body string) string {
	if body != "" {
		body = "," + body
	}
	return fmt.Sprintf(`{"ignition":{"version":%q}%s}`, version, body)
}

func b64(s string) string { return "data:;base64," + base64.StdEncoding.EncodeToString([]byte(s)) }

func gzipB64(t testing.TB, s string) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return "data:;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

func ptr[T any](v T) *T { return &v }

// sampleBody uses only fields every 3.x spec has.
const sampleBody = `
"storage":{"files":[
  {"path":"/etc/foo.conf","mode":420,"contents":{"source":"data:,hello%20world%0A"}},
  {"path":"/etc/owned","user":{"name":"core"},"group":{"id":1000},"contents":{"source":"data:text/plain;charset=utf-8;base64,b3duZWQ="}},
  {"path":"/etc/empty"}
]},
"systemd":{"units":[
  {"name":"foo.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"},
  {"name":"crio.service","dropins":[{"name":"10-x.conf","contents":"[Service]\nNice=1\n"},{"name":"20-empty.conf"}]},
  {"name":"bad.service","mask":true}
]},
"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA one","ssh-ed25519 BBBB two"]}]}`

func sampleConfig(name string) Config {
	return Config{
		Name: name,
		Files: map[string]File{
			"/etc/foo.conf": {Field: "spec.config.storage.files[0]", Path: "/etc/foo.conf", Contents: []byte("hello world\n"), Mode: 0o644},
			"/etc/owned":    {Field: "spec.config.storage.files[1]", Path: "/etc/owned", Contents: []byte("owned"), Mode: 0o644, User: Owner{Name: "core"}, Group: Owner{ID: ptr(1000)}},
			"/etc/empty":    {Field: "spec.config.storage.files[2]", Path: "/etc/empty", Mode: 0o644},
		},
		Units: map[string]Unit{
			"foo.service": {Field: "spec.config.systemd.units[0]", Name: "foo.service", Enabled: ptr(true),
				Contents: ptr("[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n")},
			"crio.service": {Field: "spec.config.systemd.units[1]", Name: "crio.service", Dropins: map[string]string{"10-x.conf": "[Service]\nNice=1\n"}},
			"bad.service":  {Field: "spec.config.systemd.units[2]", Name: "bad.service", Mask: true},
		},
		SSHKeys: map[string]UserKeys{"core": {User: "core", Field: "spec.config.passwd.users[0].sshAuthorizedKeys",
			Keys: []string{"ssh-ed25519 AAAA one", "ssh-ed25519 BBBB two"}}},
		Unreconcilable: map[string]string{},
	}
}

func TestParseEverySpecVersion(t *testing.T) {
	for _, v := range []string{"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"} {
		t.Run(v, func(t *testing.T) {
			got, err := Parse(machineConfig("rendered-worker-"+v, ignitionJSON(v, sampleBody)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if want := sampleConfig("rendered-worker-" + v); !reflect.DeepEqual(got, want) {
				t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseSpecFields(t *testing.T) {
	mc := machineConfig("rendered-worker-abc", "")
	mc.Spec.OSImageURL = "quay.io/os@sha256:1"
	mc.Spec.KernelArguments = []string{"nosmt", `a=1 b="x y"  c`, "nosmt"}
	mc.Spec.Extensions = []string{"usbguard"}
	mc.Spec.KernelType = "realtime"
	mc.Spec.FIPS = true
	got, err := Parse(mc)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Name: "rendered-worker-abc", Files: map[string]File{}, Units: map[string]Unit{},
		OSImageURL:      "quay.io/os@sha256:1",
		KernelArguments: []string{"nosmt", "a=1", `b="x y"`, "c", "nosmt"},
		Extensions:      []string{"usbguard"},
		KernelType:      "realtime",
		FIPS:            true,
		Unreconcilable:  map[string]string{"spec.fips": "true"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, raw := range []string{"", "  \n"} {
		got, err := Parse(machineConfig("empty", raw))
		if err != nil {
			t.Fatalf("Parse(%q): %v", raw, err)
		}
		if len(got.Files) != 0 || len(got.Units) != 0 || got.SSHKeys != nil || len(got.Unreconcilable) != 0 || got.Name != "empty" {
			t.Errorf("Parse(%q) = %+v, want an empty config", raw, got)
		}
	}
	if _, err := Parse(nil); err == nil {
		t.Error("Parse(nil) succeeded")
	}
}

func TestParseContents(t *testing.T) {
	const text = "line one\nline two\n"
	sum := sha512.Sum512([]byte(text))
	hash := "sha512-" + hex.EncodeToString(sum[:])
	tests := []struct {
		name     string
		contents string
		want     string
	}{
		{"percent-encoded", `{"source":"data:,line%20one%0Aline%20two%0A"}`, text},
		{"plain data", `{"source":"data:,abc"}`, "abc"},
		{"base64", fmt.Sprintf(`{"source":%q}`, b64(text)), text},
		{"base64 with media type", `{"source":"data:text/plain;charset=utf-8;base64,bGluZSBvbmUKbGluZSB0d28K"}`, text},
		{"gzip", fmt.Sprintf(`{"compression":"gzip","source":%q}`, gzipB64(t, text)), text},
		{"gzip with hash of decompressed data", fmt.Sprintf(`{"compression":"gzip","source":%q,"verification":{"hash":%q}}`, gzipB64(t, text), hash), text},
		{"no source", `{}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := ignitionJSON("3.4.0", fmt.Sprintf(`"storage":{"files":[{"path":"/etc/x","contents":%s}]}`, tt.contents))
			got, err := Parse(machineConfig("c", raw))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if c := string(got.Files["/etc/x"].Contents); c != tt.want {
				t.Errorf("contents = %q, want %q", c, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	files := func(entries ...string) string {
		return ignitionJSON("3.5.0", `"storage":{"files":[`+strings.Join(entries, ",")+`]}`)
	}
	units := func(entries ...string) string {
		return ignitionJSON("3.5.0", `"systemd":{"units":[`+strings.Join(entries, ",")+`]}`)
	}
	ok := `{"path":"/etc/ok"}`
	tests := []struct {
		name    string
		raw     string
		kargs   []string
		field   string
		msgPart string
	}{
		{"syntax", "{\"ignition\": {\"version\": \"3.5.0\"},\n}", nil, "spec.config", "line 2 col 1: invalid character"},
		{"unknown version", ignitionJSON("3.6.0", ""), nil, "spec.config.ignition.version", "unsupported config version"},
		{"spec 2", ignitionJSON("2.2.0", ""), nil, "spec.config.ignition.version", "unsupported config version"},
		{"no version", `{}`, nil, "spec.config.ignition.version", "invalid config version"},
		{"wrong type", `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":7}]}}`, nil, "spec.config", "cannot unmarshal number"},
		{"relative path", files(`{"path":"etc/foo"}`), nil, "spec.config.storage.files[0].path", "absolute"},
		{"dot-dot path", files(ok, `{"path":"/etc/../foo"}`), nil, "spec.config.storage.files[1].path", "not fully simplified"},
		{"mode", files(ok, `{"path":"/etc/a"}`, `{"path":"/etc/b","mode":4096}`), nil, "spec.config.storage.files[2].mode", "mode"},
		{"duplicate path", files(ok, ok), nil, "spec.config.storage.files[1]", "duplicate"},
		{"http source", files(ok, `{"path":"/etc/a","contents":{"source":"http://example.com/a"}}`), nil,
			"spec.config.storage.files[1].contents.source", "http URLs are not supported"},
		{"s3 source", files(`{"path":"/etc/a","contents":{"source":"s3://bucket/key"}}`), nil,
			"spec.config.storage.files[0].contents.source", "s3 URLs are not supported"},
		{"bad scheme", files(`{"path":"/etc/a","contents":{"source":"ftp://x/y"}}`), nil,
			"spec.config.storage.files[0].contents.source", "scheme"},
		{"bad base64", files(`{"path":"/etc/a","contents":{"source":"data:;base64,!!!"}}`), nil,
			"spec.config.storage.files[0].contents.source", ""},
		{"unknown compression", files(`{"path":"/etc/a","contents":{"compression":"xz","source":"data:,x"}}`), nil,
			"spec.config.storage.files[0].contents.compression", "compression"},
		{"not gzip", files(`{"path":"/etc/a","contents":{"compression":"gzip","source":"data:,x"}}`), nil,
			"spec.config.storage.files[0].contents.compression", "gzip"},
		{"hash mismatch", files(`{"path":"/etc/a","contents":{"source":"data:,x","verification":{"hash":"sha256-` + strings.Repeat("0", 64) + `"}}}`), nil,
			"spec.config.storage.files[0].contents.verification.hash", "do not match"},
		{"hash size", files(`{"path":"/etc/a","contents":{"source":"data:,x","verification":{"hash":"sha256-00"}}}`), nil,
			"spec.config.storage.files[0].contents.verification.hash", "size"},
		{"hash type", files(`{"path":"/etc/a","contents":{"source":"data:,x","verification":{"hash":"md5-00"}}}`), nil,
			"spec.config.storage.files[0].contents.verification.hash", "hash function"},
		{"append from http", files(`{"path":"/etc/a","append":[{"source":"data:,x"},{"source":"https://x/y"}]}`), nil,
			"spec.config.storage.files[0].append[1].source", "https URLs are not supported"},
		{"unit type", units(`{"name":"foo"}`), nil, "spec.config.systemd.units[0].name", ""},
		{"unit characters", units(`{"name":"a.service"}`, `{"name":"foo bar.service"}`), nil, "spec.config.systemd.units[1].name", "characters"},
		{"unit prefix", units(`{"name":"@x.service"}`), nil, "spec.config.systemd.units[0].name", "empty prefix"},
		{"unit contents", units(`{"name":"a.service","contents":"[Service"}`), nil, "spec.config.systemd.units[0].contents", ""},
		{"dropin name", units(`{"name":"a.service","dropins":[{"name":"x","contents":""}]}`), nil,
			"spec.config.systemd.units[0].dropins[0].name", ""},
		{"dropin hidden", units(`{"name":"a.service","dropins":[{"name":".conf","contents":""}]}`), nil,
			"spec.config.systemd.units[0].dropins[0].name", "hidden"},
		{"merge", ignitionJSON("3.5.0", `"ignition":{"version":"3.5.0","config":{"merge":[{"source":"data:,%7B%7D"}]}}`), nil,
			"spec.config.ignition.config.merge", "fully rendered"},
		{"kernel argument quote", ignitionJSON("3.5.0", ""), []string{"a", `b="x`}, "spec.kernelArguments[1]", "unbalanced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := machineConfig("rendered-worker-abc", tt.raw)
			mc.Spec.KernelArguments = tt.kargs
			_, err := Parse(mc)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Parse error = %v, want a *ConfigError", err)
			}
			if ce.Object != "rendered-worker-abc" || ce.Field != tt.field {
				t.Errorf("error at %q %q, want %q %q (%v)", ce.Object, ce.Field, "rendered-worker-abc", tt.field, err)
			}
			if !strings.Contains(ce.Msg, tt.msgPart) {
				t.Errorf("message %q does not contain %q", ce.Msg, tt.msgPart)
			}
			prefix := fmt.Sprintf("MachineConfig %q: %s: ", "rendered-worker-abc", tt.field)
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("Error() = %q, want prefix %q", err, prefix)
			}
		})
	}
}

func TestParseCountsMoreErrors(t *testing.T) {
	raw := ignitionJSON("3.5.0", `"storage":{"files":[{"path":"/etc/a","mode":9999999},{"path":"/etc/b","contents":{"source":"http://x/y"}}]},
		"systemd":{"units":[{"name":"x"}]}`)
	_, err := Parse(machineConfig("m", raw))
	want := `MachineConfig "m": spec.config.storage.files[0].mode: illegal file mode (and 1 more error)`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v, want %s", err, want)
	}
}

func TestParseUnreconcilable(t *testing.T) {
	raw := ignitionJSON("3.5.0", `
"kernelArguments":{"shouldExist":["quiet"]},
"storage":{
  "disks":[{"device":"/dev/sdb","wipeTable":true}],
  "filesystems":[{"device":"/dev/sdb1","format":"xfs","path":"/var/data"}],
  "raid":[{"name":"md0","level":"raid1","devices":["/dev/sdc","/dev/sdd"]}],
  "luks":[{"name":"data","device":"/dev/sde"}],
  "directories":[{"path":"/etc/d"}],
  "links":[{"path":"/etc/l","target":"/etc/d"}],
  "files":[{"path":"/etc/a","contents":{"source":"data:,x"},"append":[{"source":"data:,y"}]}]
},
"passwd":{
  "users":[{"name":"core","passwordHash":"$6$x","gecos":"Core","sshAuthorizedKeys":["k"]},{"name":"alice","homeDir":"/srv/a","sshAuthorizedKeys":["a"]}],
  "groups":[{"name":"admins"}]
}`)
	mc := machineConfig("m", raw)
	mc.Spec.FIPS = true
	got, err := Parse(mc)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range got.Unreconcilable {
		keys = append(keys, k)
	}
	want := []string{
		"spec.config.kernelArguments",
		"spec.config.passwd.groups",
		"spec.config.passwd.users[name=alice]",
		"spec.config.passwd.users[name=core]",
		"spec.config.storage.directories",
		"spec.config.storage.disks",
		"spec.config.storage.files[path=/etc/a].append",
		"spec.config.storage.filesystems",
		"spec.config.storage.links",
		"spec.config.storage.luks",
		"spec.config.storage.raid",
		"spec.fips",
	}
	if !reflect.DeepEqual(SortedKeys(got.Unreconcilable), want) {
		t.Errorf("unreconcilable keys:\n got %q\nwant %q", SortedKeys(got.Unreconcilable), want)
	}
	if c := got.Unreconcilable["spec.config.passwd.users[name=core]"]; c != `{"gecos":"Core","name":"core"}` {
		t.Errorf("core entry = %s (the SSH keys and password hash are applied in place)", c)
	}
	if got.PasswordHash != "$6$x" {
		t.Errorf("password hash = %q", got.PasswordHash)
	}
	if c := string(got.Files["/etc/a"].Contents); c != "xy" {
		t.Errorf("appended contents = %q, want %q", c, "xy")
	}
	if c := got.Unreconcilable["spec.config.passwd.users[name=alice]"]; c != `{"homeDir":"/srv/a","name":"alice"}` {
		t.Errorf("alice's entry = %s (her SSH keys are applied in place)", c)
	}
	if got.SSHKeys["core"].Keys[0] != "k" || got.SSHKeys["alice"].Keys[0] != "a" || len(got.SSHKeys) != 2 {
		t.Errorf("SSH keys = %+v", got.SSHKeys)
	}
}

func TestParseModeAndOwners(t *testing.T) {
	raw := ignitionJSON("3.5.0", `"storage":{"files":[{"path":"/etc/a","mode":493,"user":{"id":0},"group":{"name":"wheel"}}]}`)
	got, err := Parse(machineConfig("m", raw))
	if err != nil {
		t.Fatal(err)
	}
	want := File{Field: "spec.config.storage.files[0]", Path: "/etc/a", Mode: fs.FileMode(0o755), User: Owner{ID: ptr(0)}, Group: Owner{Name: "wheel"}}
	if f := got.Files["/etc/a"]; !reflect.DeepEqual(f, want) {
		t.Errorf("file = %+v, want %+v", f, want)
	}
}

func TestSplitKernelArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"a", []string{"a"}, true},
		{"  a \t b\n", []string{"a", "b"}, true},
		{`x="a b" y`, []string{`x="a b"`, "y"}, true},
		{`""`, []string{`""`}, true},
		{`x="a`, []string{`x="a`}, false},
	}
	for _, tt := range tests {
		got, ok := SplitKernelArgs(tt.in)
		if !reflect.DeepEqual(got, tt.want) || ok != tt.ok {
			t.Errorf("SplitKernelArgs(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(ignitionJSON("3.5.0", sampleBody)))
	f.Add([]byte(ignitionJSON("3.0.0", sampleBody)))
	f.Add([]byte(ignitionJSON("3.5.0", `"storage":{"files":[{"path":"/etc/a","contents":{"compression":"gzip","source":"data:;base64,H4sIAAAAAAAA/0tMSgYAvp4pTwMAAAA="}}]}`)))
	f.Add([]byte(ignitionJSON("3.5.0", `"storage":{"files":[{"path":"/etc/a","append":[{"source":"data:,y"}]}],"disks":[{"device":"/dev/sdb"}]}`)))
	f.Add([]byte(`{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k"]}]}}`))
	f.Add([]byte(`{`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := Parse(&mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}}})
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Parse error %v is not a *ConfigError", err)
			}
			return
		}
		// A parsed config compares cleanly with itself and with nothing.
		if d, err := Compare(cfg, cfg); err != nil || !d.Empty() {
			t.Fatalf("Compare(cfg, cfg) = %+v, %v", d, err)
		}
		d, _ := Compare(Config{}, cfg)
		_ = Summary(d, DefaultPolicy().PostAction(Config{}, cfg, d))
	})
}
