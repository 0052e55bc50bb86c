package render

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// mergeCase is one merge, named after the upstream test it ports
// (machine-config-operator pkg/controller/common/helpers_test.go and
// pkg/controller/render/render_controller_test.go).
type mergeCase struct {
	name    string
	configs func(t *testing.T) []*mcfgv1.MachineConfig
	opts    Options
	// want is the spec without its Ignition config, wantIgn that config.
	want    mcfgv1.MachineConfigSpec
	wantIgn types.Config
	// wantSources is the merge order, when checked.
	wantSources []string
}

func mergeCases() []mergeCase { return append(poolMergeCases(), fileMergeCases()...) }

// poolMergeCases are the parts of upstream's TestMergeMachineConfigs.
func poolMergeCases() []mergeCase {
	mode := 420
	return []mergeCase{{
		// The first part: one FIPS config and no Ignition config still
		// gives a versioned config and the defaults.
		name: "TestMergeMachineConfigs/fips alone",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{withSpec(fragment(t, "fips", "worker", nil), func(s *mcfgv1.MachineConfigSpec) { s.FIPS = true })}
		},
		opts: Options{BaseOSImageURL: image1},
		want: mcfgv1.MachineConfigSpec{OSImageURL: image1, KernelArguments: []string{}, FIPS: true, KernelType: "default", Extensions: []string{}},
	}, {
		// The second part: every field from its own config; the two
		// configs named "ssh" keep their input order; core's keys and
		// password hash merge into one user. (Upstream's v2 config is
		// left out: the daemon accepts Ignition spec 3 only.)
		name: "TestMergeMachineConfigs/every field",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			user := func(u types.PasswdUser) *types.Config {
				return &types.Config{Passwd: types.Passwd{Users: []types.PasswdUser{u}}}
			}
			return []*mcfgv1.MachineConfig{
				withSpec(fragment(t, "osimageurl", "worker", nil), func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = image2 }),
				withSpec(fragment(t, "kargs", "worker", nil), func(s *mcfgv1.MachineConfigSpec) {
					s.KernelArguments = []string{"testKarg", "kargFromIgnitionDowngrade"}
				}),
				withSpec(fragment(t, "kerneltype", "worker", nil), func(s *mcfgv1.MachineConfigSpec) { s.KernelType = "realtime" }),
				withSpec(fragment(t, "extension", "worker", nil), func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"usbguard"} }),
				fragment(t, "ssh", "worker", user(types.PasswdUser{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{"5678"}})),
				withSpec(fragment(t, "fips", "worker", nil), func(s *mcfgv1.MachineConfigSpec) { s.FIPS = true }),
				fragment(t, "passwd", "worker", user(types.PasswdUser{Name: "core", PasswordHash: ptr("testpass")})),
				fragment(t, "ssh", "worker", user(types.PasswdUser{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{"1234"}})),
			}
		},
		opts: Options{BaseOSImageURL: image1},
		want: mcfgv1.MachineConfigSpec{OSImageURL: image2, KernelArguments: []string{"testKarg", "kargFromIgnitionDowngrade"},
			FIPS: true, KernelType: "realtime", Extensions: []string{"usbguard"}},
		wantIgn: types.Config{Passwd: types.Passwd{Users: []types.PasswdUser{
			{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{"5678", "1234"}, PasswordHash: ptr("testpass")}}}},
		wantSources: []string{"extension", "fips", "kargs", "kerneltype", "osimageurl", "passwd", "ssh", "ssh"},
	}, {
		// The third part: bbb overrides aaa by name; the infra config ccc
		// comes after every worker one and overrides ddd's gzip file,
		// whose compression goes with it.
		name: "TestMergeMachineConfigs/custom pool over worker",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{
				fragment(t, "ccc", "infra", ignFiles(rootFile("/etc/test2", "data:,new", mode))),
				fragment(t, "aaa", "worker", ignFiles(rootFile("/etc/test1", "data:,old", mode))),
				fragment(t, "bbb", "worker", ignFiles(rootFile("/etc/test1", "data:,new", mode))),
				fragment(t, "ddd", "worker", ignFiles(gzipFile(t, "/etc/test2", "data:,old", mode))),
			}
		},
		want: mcfgv1.MachineConfigSpec{KernelArguments: []string{}, KernelType: "default", Extensions: []string{}},
		wantIgn: *ignFiles(overwritten(rootFile("/etc/test1", "data:,new", mode), true),
			overwritten(rootFile("/etc/test2", "data:,new", mode), true)),
		wantSources: []string{"aaa", "bbb", "ddd", "ccc"},
	}}
}

// fileMergeCases are the cases of upstream's tests of files alone.
func fileMergeCases() []mergeCase {
	mode := 420
	return []mergeCase{{
		name: "TestSetDefaultFileOverwrite",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{fragment(t, "overwrite", "worker", ignFiles(
				rootFile("/etc/testfileconfig1", "data:,test", mode),
				overwritten(rootFile("/etc/testfileconfig2", "data:,test", mode), false)))}
		},
		want: mcfgv1.MachineConfigSpec{KernelArguments: []string{}, KernelType: "default", Extensions: []string{}},
		wantIgn: *ignFiles(overwritten(rootFile("/etc/testfileconfig1", "data:,test", mode), true),
			overwritten(rootFile("/etc/testfileconfig2", "data:,test", mode), false)),
	}, {
		// coreos/butane#332: a plain file over a gzip one keeps no gzip.
		name: "TestIgnitionMergeCompressed",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{
				fragment(t, "a", "worker", ignFiles(gzipFile(t, "/etc/testfileconfig", "old", mode))),
				fragment(t, "b", "worker", ignFiles(rootFile("/etc/testfileconfig", "data:,hello%20world", mode))),
			}
		},
		want:    mcfgv1.MachineConfigSpec{KernelArguments: []string{}, KernelType: "default", Extensions: []string{}},
		wantIgn: *ignFiles(overwritten(rootFile("/etc/testfileconfig", "data:,hello%20world", mode), true)),
	}, {
		name: "TestGenerateMachineConfigOverrideOSImageURL",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{
				withSpec(fragment(t, "00-test-cluster-master-1", "master", nil), func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = image3 }),
				withSpec(fragment(t, "00-test-cluster-master", "master", nil), func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = image1 }),
				withSpec(fragment(t, "00-test-cluster-master-0", "master", nil), func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = image2 }),
			}
		},
		want: mcfgv1.MachineConfigSpec{OSImageURL: image3, KernelArguments: []string{}, KernelType: "default", Extensions: []string{}},
	}, {
		// MergeMachineConfigs: a generated config's OS image is the base
		// one, never an override; kernel arguments keep duplicates;
		// 64k-pages wins over the default kernel.
		name: "MergeMachineConfigs/generated OS image, duplicate kargs, 64k-pages",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			gen := withSpec(fragment(t, "00-worker", "worker", nil), func(s *mcfgv1.MachineConfigSpec) {
				s.OSImageURL, s.KernelArguments = image2, []string{"x"}
			})
			gen.Annotations = map[string]string{GeneratedByAnnotation: "v1"}
			return []*mcfgv1.MachineConfig{gen, withSpec(fragment(t, "99-worker", "worker", nil), func(s *mcfgv1.MachineConfigSpec) {
				s.KernelArguments, s.KernelType = []string{"x", "y"}, "64k-pages"
			})}
		},
		opts: Options{BaseOSImageURL: image1},
		want: mcfgv1.MachineConfigSpec{OSImageURL: image1, KernelArguments: []string{"x", "x", "y"}, KernelType: "64k-pages", Extensions: []string{}},
	}}
}

func overwritten(f types.File, v bool) types.File {
	f.Overwrite = ptr(v)
	return f
}

func TestMergeUpstreamCases(t *testing.T) {
	for _, c := range mergeCases() {
		t.Run(c.name, func(t *testing.T) {
			res, err := Render("worker", c.configs(t), c.opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			got := res.Config.Spec
			if ign, want := string(got.Config.Raw), wantIgnition(t, c.wantIgn); ign != want {
				t.Errorf("Ignition config:\n got %s\nwant %s", ign, want)
			}
			got.Config.Raw = nil
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("spec:\n got %+v\nwant %+v", got, c.want)
			}
			if c.wantSources != nil {
				var names []string
				for _, s := range res.Sources {
					names = append(names, s.Name)
				}
				if !reflect.DeepEqual(names, c.wantSources) {
					t.Errorf("sources %v, want %v", names, c.wantSources)
				}
			}
			if _, err := plan.Parse(res.Config); err != nil {
				t.Errorf("the daemon refuses the rendered config: %v", err)
			}
		})
	}
}

// TestRenderRefusals: a fragment that cannot render is refused, naming it
// and its field.
func TestRenderRefusals(t *testing.T) {
	for _, c := range refusalCases() {
		t.Run(c.name, func(t *testing.T) {
			_, err := Render("worker", c.configs(t), c.opts)
			var ce *plan.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Render: %v, want a *plan.ConfigError", err)
			}
			if ce.Object != c.object || (c.field != "" && ce.Field != c.field) || !strings.Contains(ce.Msg, c.msg) {
				t.Errorf("got %s (object %q field %q), want object %q field %q and %q in the message", err, ce.Object, ce.Field, c.object, c.field, c.msg)
			}
		})
	}
}

// refusalCase is a rendering refused, naming object and field, with msg
// in the message.
type refusalCase struct {
	name, object, field, msg string
	configs                  func(t *testing.T) []*mcfgv1.MachineConfig
	opts                     Options
}

func refusalCases() []refusalCase {
	mode := 420
	return []refusalCase{{
		// Upstream: an Ignition config with contents and no version.
		name: "TestIgnValidationGenerateRenderedMachineConfig", object: "05-extra-master", field: "spec.config.ignition.version",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			bad := fragment(t, "05-extra-master", "master", nil)
			bad.Spec.Config.Raw = []byte(`{"ignition":{"version":""},"storage":{"files":[{"path":"/dummy/1"}]}}`)
			return []*mcfgv1.MachineConfig{fragment(t, "00-test-cluster-master", "master", ignFiles(rootFile("/dummy/0", "data:,", mode))), bad}
		},
	}, {
		name: "MergeMachineConfigs/kernel-devel with realtime", object: "99-b", field: "spec.extensions[1]", msg: "kernelType realtime",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{
				withSpec(fragment(t, "99-a", "worker", nil), func(s *mcfgv1.MachineConfigSpec) { s.KernelType = "realtime" }),
				withSpec(fragment(t, "99-b", "worker", nil), func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"usbguard", "kernel-devel"} }),
			}
		},
	}, {
		name: "MergeMachineConfigs/no labels", object: "nolabels", field: "metadata.labels",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			mc := fragment(t, "nolabels", "worker", nil)
			mc.Labels = nil
			return []*mcfgv1.MachineConfig{mc}
		},
	}, {
		name: "TestValidateIgnition/setuid mode", object: "99-suid", field: "spec.config.storage.files[0].mode", msg: "setuid",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{fragment(t, "99-suid", "worker", ignFiles(rootFile("/usr/local/bin/x", "data:,", 0o4755)))}
		},
	}, {
		name: "daemon parse/unknown extension", object: "99-ext", field: "spec.extensions[0]",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{withSpec(fragment(t, "99-ext", "worker", nil), func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"wasm"} })}
		},
	}, {
		name: "daemon parse/http source", object: "99-http", field: "spec.config.storage.files[0].contents.source",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{fragment(t, "99-http", "worker", ignFiles(rootFile("/etc/x", "http://example.com/x", mode)))}
		},
	}, {
		// Each passes alone; merged, /etc/a is a file where the later
		// fragment's folder goes.
		name: "daemon parse/conflict between fragments", object: "99-b", field: "spec.config.storage.files[1].path", msg: "merged over 99-a",
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{
				fragment(t, "99-a", "worker", ignFiles(rootFile("/etc/a", "data:,", mode))),
				fragment(t, "99-b", "worker", ignFiles(rootFile("/etc/a/b", "data:,", mode))),
				fragment(t, "99-c", "worker", ignFiles(rootFile("/etc/c", "data:,", mode))),
			}
		},
	}, {
		name: "daemon parse/config size cap", object: "99-b", msg: "merged over 99-a",
		opts: Options{Limits: plan.Limits{MaxFileSize: 8, MaxConfigSize: 10}},
		configs: func(t *testing.T) []*mcfgv1.MachineConfig {
			return []*mcfgv1.MachineConfig{
				fragment(t, "99-a", "worker", ignFiles(rootFile("/etc/a", "data:,123456", mode))),
				fragment(t, "99-b", "worker", ignFiles(rootFile("/etc/b", "data:,123456", mode))),
			}
		},
	}}
}
