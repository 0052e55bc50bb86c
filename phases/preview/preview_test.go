package preview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

func mc(name, ign string, kargs ...string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(ign)}, KernelArguments: kargs}}
}

func ign(parts ...string) string {
	return `{"ignition":{"version":"3.4.0"}` + strings.Join(append([]string{""}, parts...), ",") + `}`
}

func files(fs ...string) string { return `"storage":{"files":[` + strings.Join(fs, ",") + `]}` }

func file(path, data string, extra ...string) string {
	return `{"path":"` + path + `","contents":{"source":"data:,` + data + `"}` + strings.Join(append([]string{""}, extra...), ",") + `}`
}

const unitText = `"[Service]\nExecStart=/bin/true\n"`

type buildCase struct {
	name    string
	current *mcfgv1.MachineConfig
	desired *mcfgv1.MachineConfig
	check   func(t *testing.T, r Report)
	text    []string
}

func buildCases() []buildCase {
	base := mc("rendered-worker-a", ign(files(file("/etc/a", "one"), file("/etc/gone", "x")),
		`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"]}]}`,
		`"systemd":{"units":[{"name":"u.service","contents":`+unitText+`,"dropins":[{"name":"10-a.conf","contents":"a"}]}]}`))
	return append(sshBuildCases(base), []buildCase{
		{"files: reload crio and restart by rule; mode and owner", nil,
			mc("rendered-worker-b", ign(files(file("/etc/containers/registries.conf", "unqualified-search-registries%20%3D%20%5B%22docker.io%22%5D"),
				file("/etc/app/x.conf", "abc", `"mode":384`, `"user":{"name":"core"}`)))),
			func(t *testing.T, r Report) {
				if r.PostAction.Kind != "ReloadCRIO" || len(r.Files) != 2 || r.DrainRequired {
					t.Fatalf("report %+v", r)
				}
				f := r.Files[0]
				if f.Path != "/etc/app/x.conf" || f.Change != Added || *f.Size != 3 || f.Mode.To != "0600" ||
					f.Owner.To != "core:root" || f.Rule != "/etc/app/" || f.Action != "Restart app.service" || f.Source != "spec.nodeDisruptionPolicy.files[0]" {
					t.Errorf("file %+v", f)
				}
				if g := r.Files[1]; g.Action != "Special" || g.Rule != "/etc/containers/registries.conf" || g.Source != "default" {
					t.Errorf("file %+v", g)
				}
			}, []string{"+ /etc/app/x.conf (3 bytes; mode 0600; owner core:root)  => Restart app.service [rule /etc/app/, spec.nodeDisruptionPolicy.files[0]]",
				"Post action: ReloadCRIO (Restart app.service, Special); no drain"}},
		{"changed, removed, units, kernel args: reboot", base,
			mc("rendered-worker-b", ign(files(file("/etc/a", "three", `"mode":384`)),
				`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"]}]}`,
				`"systemd":{"units":[{"name":"u.service","contents":`+unitText+`,"enabled":true,"dropins":[{"name":"20-b.conf","contents":"b"}]},{"name":"m.service","mask":true}]}`),
				"nosmt"),
			func(t *testing.T, r Report) {
				if r.PostAction.Kind != "Reboot" || !r.DrainRequired || len(r.Files) != 2 || len(r.Units) != 2 {
					t.Fatalf("report %+v", r)
				}
				if f := r.Files[0]; f.Change != Changed || !f.ContentsChanged || *f.OldSize != 3 || *f.Size != 5 ||
					f.Mode.From != "0644" || f.Mode.To != "0600" || f.Owner != nil || f.Action != "Reboot (no rule matches)" {
					t.Errorf("changed file %+v", f)
				}
				if f := r.Files[1]; f.Path != "/etc/gone" || f.Change != Removed {
					t.Errorf("removed file %+v", f)
				}
				u := r.Units[1]
				if u.Name != "u.service" || u.Change != Changed || u.ContentsChanged || u.Enablement.To != "enabled" ||
					len(u.Dropins) != 2 || u.Dropins[0] != (DropinChange{"20-b.conf", Added}) ||
					u.Dropins[1] != (DropinChange{"10-a.conf", Removed}) || u.Action != "Reboot (no rule matches)" {
					t.Errorf("unit %+v", u)
				}
				if m := r.Units[0]; m.Name != "m.service" || m.Masked.To != "masked" {
					t.Errorf("masked unit %+v", m)
				}
				if r.KernelArgs == nil || r.KernelArgs.Added[0] != "nosmt" {
					t.Errorf("kernel args %+v", r.KernelArgs)
				}
			}, []string{"Post action: Reboot; drain required", "~ /etc/a (contents changed, 3 -> 5 bytes; mode 0644 -> 0600)",
				"- /etc/gone  => Reboot (no rule matches)", "~ u.service (drop-in 20-b.conf added; drop-in 10-a.conf removed; enablement left alone -> enabled)",
				"+ m.service (masked)", "Kernel arguments: add nosmt  => reboot"}},
		{"refused: every field", base, mc("rendered-worker-b", ign(files(file("/etc/a", "x", `"mode":-1`), file("/etc/b", "y", `"mode":99999`)))),
			func(t *testing.T, r Report) {
				if r.Apply || r.Refusal.State != phases.StateDegraded || len(r.Refusal.Problems) != 2 ||
					r.Refusal.Problems[1].Field != "spec.config.storage.files[1].mode" {
					t.Errorf("refusal %+v", r.Refusal)
				}
				if !strings.HasPrefix(r.Refusal.Message, `Error: MachineConfig "rendered-worker-b": spec.config.storage.files[0].mode`) ||
					!strings.HasSuffix(r.Refusal.Message, "(and 1 more error)") {
					t.Errorf("message %q", r.Refusal.Message)
				}
			}, []string{"would be REFUSED in prepare (node state Degraded)", "  spec.config.storage.files[1].mode: "}},
		{"refused: unreconcilable", base, mc("rendered-worker-b", ign(`"storage":{"disks":[{"device":"/dev/vdb"}]}`)),
			func(t *testing.T, r Report) {
				if r.Apply || r.Refusal.State != phases.StateUnreconcilable || r.Refusal.Problems[0].Field != "spec.config.storage.disks" {
					t.Errorf("refusal %+v", r.Refusal)
				}
			}, []string{"(node state Unreconcilable)", "cannot be applied in place: spec.config.storage.disks changed"}},
		{"refused: name rule", nil, mc("99-worker-ssh", ign()),
			func(t *testing.T, r Report) {
				if r.Apply || r.Refusal.Problems[0].Field != "metadata.name" {
					t.Errorf("refusal %+v", r.Refusal)
				}
			}, []string{`Error: MachineConfig "99-worker-ssh": metadata.name: not a rendered config`}},
	}...)
}

// sshBuildCases change SSH keys from base, which gives core one key.
func sshBuildCases(base *mcfgv1.MachineConfig) []buildCase {
	return []buildCase{
		{"ssh keys only: none", base, mc("rendered-worker-b", ign(files(file("/etc/a", "one"), file("/etc/gone", "x")),
			`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1","k2"]}]}`,
			`"systemd":{"units":[{"name":"u.service","contents":`+unitText+`,"dropins":[{"name":"10-a.conf","contents":"a"}]}]}`)),
			func(t *testing.T, r Report) {
				if !r.Apply || r.PostAction.Kind != "None" || r.DrainRequired || len(r.SSHKeys) != 1 || r.SSHKeys[0].User != "core" ||
					r.SSHKeys[0].Before != 1 || r.SSHKeys[0].After != 2 || len(r.Files)+len(r.Units) != 0 {
					t.Errorf("report %+v", r)
				}
			}, []string{"would be applied", "Post action: None; no drain", "SSH keys of core: 1 -> 2  => None [rule default]"}},
		// Each user's keys are a line of their own: alice's added, core's
		// removed (0: the key file removed).
		{"ssh keys of two users", base, mc("rendered-worker-b", ign(files(file("/etc/a", "one"), file("/etc/gone", "x")),
			`"passwd":{"users":[{"name":"alice","sshAuthorizedKeys":["a1","a2","a3"]}]}`,
			`"systemd":{"units":[{"name":"u.service","contents":`+unitText+`,"dropins":[{"name":"10-a.conf","contents":"a"}]}]}`)),
			func(t *testing.T, r Report) {
				want := []SSHKeys{{User: "alice", After: 3}, {User: "core", Before: 1}}
				if len(r.SSHKeys) != 2 || r.SSHKeys[0].User != want[0].User || r.SSHKeys[0].After != 3 || r.SSHKeys[0].Before != 0 ||
					r.SSHKeys[1].User != want[1].User || r.SSHKeys[1].Before != 1 || r.SSHKeys[1].After != 0 || r.PostAction.Kind != "None" {
					t.Errorf("SSH keys %+v, want %+v", r.SSHKeys, want)
				}
			}, []string{"SSH keys of alice: 0 -> 3  => None [rule default]", "SSH keys of core: 1 -> 0  => None [rule default]"}},
	}
}

func TestBuild(t *testing.T) {
	policy := plan.DefaultPolicy().With(plan.Policy{Files: []plan.FileRule{{Path: "/etc/app/",
		Actions: []plan.Action{{Type: plan.ActRestart, Unit: "app.service"}}, Source: "spec.nodeDisruptionPolicy.files[0]"}}})
	rule, _ := plan.ParseConfigPattern(plan.DefaultConfigPattern)
	for _, tt := range buildCases() {
		t.Run(tt.name, func(t *testing.T) {
			dec, err := phases.PlanConfigs(tt.current, tt.desired, policy, rule.For("worker"), plan.Limits{})
			cur := ""
			if tt.current != nil {
				cur = tt.current.Name
			}
			r := Build(cur, tt.desired.Name, dec, err, policy)
			tt.check(t, r)
			if r.Apply && r.Summary != plan.Summary(dec.Diff, dec.Action) {
				t.Errorf("summary %q is not prepare's", r.Summary)
			}
			var text, js bytes.Buffer
			if err := r.Text(&text); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.text {
				if !strings.Contains(text.String(), want) {
					t.Errorf("text lacks %q:\n%s", want, text.String())
				}
			}
			if err := r.JSON(&js); err != nil {
				t.Fatal(err)
			}
			var back Report
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Apply != r.Apply || back.Desired != r.Desired {
				t.Errorf("JSON round trip: %v %+v", err, back)
			}
		})
	}
}

// A preview never shows contents.
func TestNoContents(t *testing.T) {
	secret := "s3cr3tpassw0rd"
	desired := mc("rendered-worker-b", ign(files(file("/etc/secret", secret)),
		`"systemd":{"units":[{"name":"u.service","contents":"`+secret+`"}]}`))
	dec, err := phases.PlanConfigs(nil, desired, plan.DefaultPolicy(), plan.ConfigRule{}, plan.Limits{})
	r := Build("", desired.Name, dec, err, plan.DefaultPolicy())
	var text, js bytes.Buffer
	_ = r.Text(&text)
	_ = r.JSON(&js)
	if strings.Contains(text.String()+js.String(), secret) {
		t.Errorf("the preview shows contents:\n%s\n%s", text.String(), js.String())
	}
}
