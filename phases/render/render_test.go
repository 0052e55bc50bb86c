package render

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// pool is a small pool's fragments: a file, a unit, SSH keys and OS fields.
func pool(t *testing.T) []*mcfgv1.MachineConfig {
	unit := &types.Config{Systemd: types.Systemd{Units: []types.Unit{{Name: "chronyd.service", Enabled: ptr(true)}}}}
	ssh := &types.Config{Passwd: types.Passwd{Users: []types.PasswdUser{{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{"ssh-ed25519 AAAA k"}}}}}
	return []*mcfgv1.MachineConfig{
		fragment(t, "99-worker-chrony", "worker", ignFiles(rootFile("/etc/chrony.conf", "data:,server%20a", 0o644))),
		fragment(t, "99-worker-ssh", "worker", ssh),
		withSpec(fragment(t, "99-worker-units", "worker", unit), func(s *mcfgv1.MachineConfigSpec) {
			s.KernelArguments = []string{"nosmt"}
			s.OSImageURL = image1
		}),
	}
}

// TestRenderNameIsStable is the golden test: rendering the same fragments
// twice, in any order, gives one name; a change to any input gives
// another.
func TestRenderNameIsStable(t *testing.T) {
	first, err := Render("worker", pool(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^rendered-worker-[0-9a-f]{32}$`).MatchString(first.Config.Name) {
		t.Fatalf("name %q, want rendered-worker-<32 hex digits>", first.Config.Name)
	}
	reversed := pool(t)
	slices.Reverse(reversed)
	again, err := Render("worker", reversed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Config.Name != first.Config.Name || string(again.Config.Spec.Config.Raw) != string(first.Config.Spec.Config.Raw) {
		t.Errorf("rendering twice gave %s then %s", first.Config.Name, again.Config.Name)
	}
	changes := map[string]func(mcs []*mcfgv1.MachineConfig) string{
		"file contents": func(mcs []*mcfgv1.MachineConfig) string { return "worker" },
		"kernel argument": func(mcs []*mcfgv1.MachineConfig) string {
			mcs[2].Spec.KernelArguments = append(mcs[2].Spec.KernelArguments, "quiet")
			return "worker"
		},
		"OS image":    func(mcs []*mcfgv1.MachineConfig) string { mcs[2].Spec.OSImageURL = image2; return "worker" },
		"FIPS":        func(mcs []*mcfgv1.MachineConfig) string { mcs[0].Spec.FIPS = true; return "worker" },
		"kernel type": func(mcs []*mcfgv1.MachineConfig) string { mcs[1].Spec.KernelType = "realtime"; return "worker" },
		"extension": func(mcs []*mcfgv1.MachineConfig) string {
			mcs[1].Spec.Extensions = []string{"usbguard"}
			return "worker"
		},
		"kernel arguments' order": func(mcs []*mcfgv1.MachineConfig) string {
			mcs[0].Spec.KernelArguments = []string{"quiet"} // before nosmt, where the change above puts it after
			return "worker"
		},
		"pool": func([]*mcfgv1.MachineConfig) string { return "infra" },
	}
	// The name hashes the content: a fragment renamed with nothing merged
	// differently keeps it.
	renamed := pool(t)
	renamed[2].Name = "00-worker-units"
	if res, err := Render("worker", renamed, Options{}); err != nil || res.Config.Name != first.Config.Name {
		t.Errorf("a rename that changes no content: %v, %v", res.Config, err)
	}
	seen := map[string]string{first.Config.Name: "the original"}
	for what, change := range changes {
		mcs := pool(t)
		if what == "file contents" {
			mcs[0] = fragment(t, "99-worker-chrony", "worker", ignFiles(rootFile("/etc/chrony.conf", "data:,server%20b", 0o644)))
		}
		p := change(mcs)
		res, err := Render(p, mcs, Options{})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if other, dup := seen[res.Config.Name]; dup {
			t.Errorf("changing the %s gave the name of %s: %s", what, other, res.Config.Name)
		}
		seen[res.Config.Name] = what
	}
}

// TestRenderedObject: the rendered config is a MachineConfig with the
// annotations upstream writes and no labels (no pool selects it), and the
// daemon's default name rule for its pool accepts it.
func TestRenderedObject(t *testing.T) {
	res, err := Render("worker", pool(t), Options{BaseOSImageURL: image2, ControllerVersion: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	mc := res.Config
	if mc.Kind != "MachineConfig" || mc.APIVersion != "machineconfiguration.openshift.io/v1" || len(mc.Labels) != 0 {
		t.Errorf("object %v, labels %v", mc.TypeMeta, mc.Labels)
	}
	if mc.Annotations[GeneratedByAnnotation] != "v9" || mc.Annotations[OSImageOverriddenAnnotation] != "true" {
		t.Errorf("annotations %v", mc.Annotations)
	}
	pattern, err := plan.ParseConfigPattern(plan.DefaultConfigPattern)
	if err != nil {
		t.Fatal(err)
	}
	if err := pattern.For("worker").Check(mc.Name); err != nil {
		t.Errorf("the daemon's name rule: %v", err)
	}
	cfg, err := plan.Parse(mc)
	if err != nil {
		t.Fatalf("the daemon refuses it: %v", err)
	}
	if len(cfg.Files) != 1 || len(cfg.Units) != 1 || len(cfg.SSHKeys) != 1 || !slices.Equal(cfg.KernelArguments, []string{"nosmt"}) {
		t.Errorf("parsed: files %v units %v keys %v kargs %v", cfg.Files, cfg.Units, cfg.SSHKeys, cfg.KernelArguments)
	}
	same, err := Render("worker", pool(t), Options{BaseOSImageURL: image1})
	if err != nil {
		t.Fatal(err)
	}
	if _, set := same.Config.Annotations[OSImageOverriddenAnnotation]; set {
		t.Errorf("the base OS image is marked overridden: %v", same.Config.Annotations)
	}
}

// TestSelect ports TestGetMachineConfigsForPool: a pool renders only what
// its selector selects, and selecting nothing is an error.
func TestSelect(t *testing.T) {
	mcs := []*mcfgv1.MachineConfig{
		fragment(t, "00-test-cluster-master", "master", nil),
		fragment(t, "05-extra-master", "master", nil),
		fragment(t, "00-test-cluster-worker", "worker", nil),
	}
	got, err := Select("master", PoolSelector("master"), mcs)
	if err != nil || len(got) != 2 || got[0].Name != "00-test-cluster-master" || got[1].Name != "05-extra-master" {
		t.Errorf("Select(master) = %v, %v", got, err)
	}
	if _, err := Select("worker", PoolSelector("worker"), mcs[:2]); err == nil || !strings.Contains(err.Error(), "no MachineConfigs") {
		t.Errorf("Select(worker) of master configs: %v, want an error", err)
	}
	if _, err := Select("all", &metav1.LabelSelector{}, mcs); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty selector: %v, want an error", err)
	}
	custom := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"worker", "master"}}}}
	if got, err := Select("custom", custom, mcs); err != nil || len(got) != 3 {
		t.Errorf("Select(custom) = %v, %v", got, err)
	}
	// A selector of only exclusions would select the unlabelled rendered
	// configs too; they are never fragments.
	rendered := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-0123"}}
	notMaster := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: RoleLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"master"}}}}
	if got, err := Select("infra", notMaster, append(mcs, rendered)); err != nil || len(got) != 1 || got[0].Name != "00-test-cluster-worker" {
		t.Errorf("Select(NotIn master) with a rendered config = %v, %v; want the worker fragment only", got, err)
	}
}
