package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// roundTrip is mc as a client reads it back from an API server, which
// stores a custom resource as a JSON map: keys sorted, whitespace gone,
// empty lists kept or dropped.
func roundTrip(t *testing.T, mc *mcfgv1.MachineConfig) *mcfgv1.MachineConfig {
	t.Helper()
	data, err := json.Marshal(mc)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	spec := m["spec"].(map[string]any)
	delete(spec, "extensions") // an empty list the server dropped
	data, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out mcfgv1.MachineConfig
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestVerify is the daemon's check of a rendered config it is handed:
// the controller's own render passes, however the API server re-encodes
// it; anything a stolen controller token could add, drop or change in a
// rendered config is refused, naming the config and the field.
func TestVerify(t *testing.T) {
	opts := Options{BaseOSImageURL: image3}
	honest := func(t *testing.T) *mcfgv1.MachineConfig {
		r, err := Render("worker", pool(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		return roundTrip(t, r.Config)
	}
	withIgnition := func(t *testing.T, mc *mcfgv1.MachineConfig, edit func(*types.Config)) *mcfgv1.MachineConfig {
		cfg, err := parseIgnition(mc.Spec.Config.Raw)
		if err != nil {
			t.Fatal(err)
		}
		edit(&cfg)
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		mc.Spec.Config = runtime.RawExtension{Raw: raw}
		return mc
	}
	cases := []struct {
		name      string
		fragments func(t *testing.T) []*mcfgv1.MachineConfig
		desired   func(t *testing.T) *mcfgv1.MachineConfig
		opts      Options
		field     string // "" for accepted
	}{
		{name: "the controller's render, re-encoded by the API server", desired: honest},
		{name: "a rendered config among the listed ones is never a fragment", desired: honest,
			fragments: func(t *testing.T) []*mcfgv1.MachineConfig {
				r, _ := Render("worker", pool(t)[:1], opts)
				r.Config.Labels = map[string]string{RoleLabel: "worker"}
				return append(pool(t), r.Config)
			}},
		{name: "a file added", field: "spec.config.storage.files", desired: func(t *testing.T) *mcfgv1.MachineConfig {
			return withIgnition(t, honest(t), func(c *types.Config) {
				c.Storage.Files = append(c.Storage.Files, rootFile("/etc/cron.d/evil", "data:,x", 0o644))
			})
		}},
		{name: "a file's contents changed", field: "spec.config.storage.files", desired: func(t *testing.T) *mcfgv1.MachineConfig {
			return withIgnition(t, honest(t), func(c *types.Config) { c.Storage.Files[0].Contents.Source = ptr("data:,server%20evil") })
		}},
		{name: "a file dropped", field: "spec.config.storage.files", desired: func(t *testing.T) *mcfgv1.MachineConfig {
			return withIgnition(t, honest(t), func(c *types.Config) { c.Storage.Files = nil })
		}},
		{name: "an SSH key added", field: "spec.config.passwd", desired: func(t *testing.T) *mcfgv1.MachineConfig {
			return withIgnition(t, honest(t), func(c *types.Config) {
				c.Passwd.Users[0].SSHAuthorizedKeys = append(c.Passwd.Users[0].SSHAuthorizedKeys, "ssh-ed25519 BBBB attacker")
			})
		}},
		{name: "a unit masked", field: "spec.config.systemd.units", desired: func(t *testing.T) *mcfgv1.MachineConfig {
			return withIgnition(t, honest(t), func(c *types.Config) { c.Systemd.Units[0].Mask = ptr(true) })
		}},
		{name: "another OS image where no fragment sets one", field: "spec.osImageURL",
			fragments: func(t *testing.T) []*mcfgv1.MachineConfig {
				p := pool(t)
				p[2].Spec.OSImageURL = ""
				return p
			},
			desired: func(t *testing.T) *mcfgv1.MachineConfig {
				p := pool(t)
				p[2].Spec.OSImageURL = ""
				r, _ := Render("worker", p, opts)
				r.Config.Spec.OSImageURL = image2
				return r.Config
			}},
		{name: "the daemon's base OS image differs from the controller's", field: "spec.osImageURL",
			opts: Options{BaseOSImageURL: image2},
			fragments: func(t *testing.T) []*mcfgv1.MachineConfig {
				p := pool(t)
				p[2].Spec.OSImageURL = ""
				return p
			},
			desired: func(t *testing.T) *mcfgv1.MachineConfig {
				p := pool(t)
				p[2].Spec.OSImageURL = ""
				r, _ := Render("worker", p, opts)
				return r.Config
			}},
		{name: "a kernel argument added", field: "spec.kernelArguments", desired: func(t *testing.T) *mcfgv1.MachineConfig {
			mc := honest(t)
			mc.Spec.KernelArguments = append(mc.Spec.KernelArguments, "init=/bin/sh")
			return mc
		}},
		{name: "an extension added", field: "spec.extensions", desired: func(t *testing.T) *mcfgv1.MachineConfig {
			mc := honest(t)
			mc.Spec.Extensions = []string{"usbguard"}
			return mc
		}},
		{name: "FIPS turned off", field: "spec.fips",
			fragments: func(t *testing.T) []*mcfgv1.MachineConfig {
				p := pool(t)
				p[0].Spec.FIPS = true
				return p
			}, desired: honest},
		{name: "a MachineConfig of another pool merged in", field: "spec.config.storage.files", desired: func(t *testing.T) *mcfgv1.MachineConfig {
			p := append(pool(t), fragment(t, "99-master-x", "master", ignFiles(rootFile("/etc/master-only", "data:,m", 0o600))))
			r, err := Render("worker", p, opts)
			if err != nil {
				t.Fatal(err)
			}
			return r.Config
		}},
		{name: "a fragment added since the render", field: "spec.config.storage.files", desired: honest,
			fragments: func(t *testing.T) []*mcfgv1.MachineConfig {
				return append(pool(t), fragment(t, "99-worker-new", "worker", ignFiles(rootFile("/etc/new", "data:,n", 0o644))))
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fragments := pool(t)
			if c.fragments != nil {
				fragments = c.fragments(t)
			}
			o := opts
			if c.opts.BaseOSImageURL != "" {
				o = c.opts
			}
			desired := c.desired(t)
			err := Verify("worker", PoolSelector("worker"), fragments, desired, o)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ce *plan.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err %v, want a *plan.ConfigError", err)
			}
			if ce.Object != desired.Name || ce.Field != c.field || !strings.Contains(ce.Msg, "not the merge of pool worker's MachineConfigs") {
				t.Errorf("refused as %q %q: %s; want the config and field %s", ce.Object, ce.Field, ce.Msg, c.field)
			}
		})
	}
}

// TestVerifyNothingSelected: a pool whose selector selects nothing, or is
// empty, verifies no config.
func TestVerifyNothingSelected(t *testing.T) {
	r, err := Render("worker", pool(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, sel := range map[string]*metav1.LabelSelector{
		"empty selector": {},
		"other role":     PoolSelector("infra"),
	} {
		if err := Verify("worker", sel, pool(t), r.Config, Options{}); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

// TestSelectorFor: the list request's selector is the pool's.
func TestSelectorFor(t *testing.T) {
	s, ok, err := SelectorFor(PoolSelector("infra"))
	if err != nil || !ok || s != RoleLabel+"=infra" {
		t.Errorf("SelectorFor = %q %v %v", s, ok, err)
	}
	if _, ok, _ := SelectorFor(&metav1.LabelSelector{}); ok {
		t.Error("an empty selector selects")
	}
}

// BenchmarkVerify is the daemon's check of one rendered config against a
// pool of ten fragments (a file each, an SSH key, a unit): its CPU and
// allocations per update, besides the one list request.
func BenchmarkVerify(b *testing.B) {
	t := &testing.T{}
	fragments := pool(t)
	for i := range 7 {
		fragments = append(fragments, fragment(t, "98-worker-"+string(rune('a'+i)), "worker",
			ignFiles(rootFile("/etc/containers/registries.d/"+string(rune('a'+i))+".yaml", "data:,docker%3A%0A%20%20a.example.com%3A%20%7B%7D%0A", 0o644))))
	}
	r, err := Render("worker", fragments, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify("worker", PoolSelector("worker"), fragments, r.Config, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
