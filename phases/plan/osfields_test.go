package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// mcWith is a MachineConfig holding c (its version set).
func mcWith(t *testing.T, c types.Config) *mcfgv1.MachineConfig {
	t.Helper()
	c.Ignition.Version = "3.5.0"
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return machineConfig("rendered-worker-1", string(raw))
}

func parseOK(t *testing.T, c types.Config) Config {
	t.Helper()
	cfg, err := ParseWithLimits(mcWith(t, c), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestExtensionPackages(t *testing.T) {
	tests := []struct {
		exts []string
		want []string
	}{
		{nil, nil},
		{[]string{"usbguard"}, []string{"usbguard"}},
		{[]string{"sysstat", "ipsec"}, []string{"NetworkManager-libreswan", "libreswan", "openvswitch3.5-ipsec", "sysstat"}},
		{[]string{"usbguard", "usbguard"}, []string{"usbguard"}},
		{[]string{"kerberos", "wasm"}, []string{"krb5-workstation", "libkadm5"}},
	}
	for _, tt := range tests {
		if got := ExtensionPackages(tt.exts); !slices.Equal(got, tt.want) {
			t.Errorf("ExtensionPackages(%q) = %q, want %q", tt.exts, got, tt.want)
		}
	}
}

func TestLayeredExtensions(t *testing.T) {
	got := LayeredExtensions([]string{"vim", "usbguard", "kernel-rt-core", "sysstat", "usbguard"})
	if want := []string{"sysstat", "usbguard"}; !slices.Equal(got, want) {
		t.Errorf("LayeredExtensions = %q, want %q (hand-layered and kernel packages are not extensions')", got, want)
	}
}

func TestKernelTypeOf(t *testing.T) {
	def := KernelPackages(KernelDefault)
	tests := []struct {
		name               string
		requested, removed []string
		want               string
	}{
		{"nothing layered", nil, nil, KernelDefault},
		{"realtime swap", KernelPackages(KernelRealtime), def, KernelRealtime},
		{"64k swap", append([]string{"usbguard"}, KernelPackages(Kernel64kPages)...), def, Kernel64kPages},
		// As machine-config-daemon: only both halves make a swap.
		{"rt layered without the removal", KernelPackages(KernelRealtime), nil, KernelDefault},
		{"removal alone (a hotfix override)", nil, []string{"kernel-core"}, KernelDefault},
		{"removal of another package", []string{"kernel-rt-core"}, []string{"vim"}, KernelDefault},
	}
	for _, tt := range tests {
		if got := KernelTypeOf(tt.requested, tt.removed); got != tt.want {
			t.Errorf("%s: KernelTypeOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestKernelPackages(t *testing.T) {
	if got := KernelPackages(""); !slices.Equal(got, KernelPackages(KernelDefault)) || !slices.Contains(got, "kernel-core") {
		t.Errorf("KernelPackages(\"\") = %q", got)
	}
	if got := KernelPackages(KernelRealtime); slices.Contains(got, "kernel-rt") {
		t.Errorf("KernelPackages(realtime) = %q: kernel-rt is a meta-package upstream leaves out", got)
	}
}

// Unknown extensions and kernel types are refused with the field named;
// the known ones parse.
func TestOSFieldsParse(t *testing.T) {
	tests := []struct {
		exts  []string
		kt    string
		field string
	}{
		{[]string{"usbguard", "kernel-devel"}, "realtime", ""},
		{nil, "64k-pages", ""},
		{[]string{"usbguard", "wasm"}, "", "spec.extensions[1]"},
		{[]string{"$(reboot)"}, "", "spec.extensions[0]"},
		{nil, "rt", "spec.kernelType"},
	}
	for _, tt := range tests {
		mc := mcWith(t, types.Config{})
		mc.Spec.Extensions, mc.Spec.KernelType = tt.exts, tt.kt
		_, err := ParseWithLimits(mc, Limits{})
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%q %q: %v", tt.exts, tt.kt, err)
		case tt.field != "" && (err == nil || !strings.Contains(err.Error(), tt.field)):
			t.Errorf("%q %q: err %v, want one naming %s", tt.exts, tt.kt, err, tt.field)
		}
	}
}

func TestCheckPasswordHash(t *testing.T) {
	tests := []struct {
		hash string
		ok   bool
	}{
		{"$6$rounds=5000$salt.salt$abcDEF0123./xyz", true},
		{"$y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9SqC.5i5rd.RhAtQ7", true},
		{"!$6$salt$hash", true},
		{"*", true},
		{"$6$salt$hash:0:99999", false},
		{"$6$salt$hash\ncore2::0:0:::::", false},
		{"$(reboot)", false},
		{"`id`", false},
		{"a b", false},
		{"$6$" + strings.Repeat("a", 600), false},
	}
	for _, tt := range tests {
		if msg := CheckPasswordHash(tt.hash); (msg == "") != tt.ok {
			t.Errorf("CheckPasswordHash(%q) = %q, want ok %v", tt.hash, msg, tt.ok)
		}
	}
}

// Core's password hash is taken (not unreconcilable) and a hostile one is
// refused naming the field; other users' stay unreconcilable.
func TestPasswdPasswordHash(t *testing.T) {
	h := "$6$salt$hash"
	cfg := parseOK(t, types.Config{Passwd: types.Passwd{Users: []types.PasswdUser{{Name: "core", PasswordHash: &h}}}})
	if cfg.PasswordHash != h || len(cfg.Unreconcilable) != 0 {
		t.Errorf("PasswordHash %q, unreconcilable %v", cfg.PasswordHash, cfg.Unreconcilable)
	}
	bad := "x:0:0"
	mc := mcWith(t, types.Config{Passwd: types.Passwd{Users: []types.PasswdUser{{Name: "core", PasswordHash: &bad}}}})
	if _, err := ParseWithLimits(mc, Limits{}); err == nil || !strings.Contains(err.Error(), "spec.config.passwd.users[0].passwordHash") {
		t.Errorf("hostile hash: %v", err)
	}
	cfg = parseOK(t, types.Config{Passwd: types.Passwd{Users: []types.PasswdUser{{Name: "ops", PasswordHash: &h}}}})
	if _, ok := cfg.Unreconcilable["spec.config.passwd.users[name=ops]"]; !ok {
		t.Errorf("another user's hash: unreconcilable %v", cfg.Unreconcilable)
	}
}

// A config may drop its links, as machine-config-daemon allows; adding or
// changing them stays refused.
func TestLinksRemoval(t *testing.T) {
	target := "/etc/b"
	withLinks := parseOK(t, types.Config{Storage: types.Storage{Links: []types.Link{
		{Node: types.Node{Path: "/etc/a"}, LinkEmbedded1: types.LinkEmbedded1{Target: &target}}}}})
	without := parseOK(t, types.Config{})
	if _, err := Compare(withLinks, without); err != nil {
		t.Errorf("removing links: %v", err)
	}
	if _, err := Compare(without, withLinks); err == nil || !strings.Contains(err.Error(), "spec.config.storage.links") {
		t.Errorf("adding links: %v", err)
	}
	other := "/etc/c"
	changed := parseOK(t, types.Config{Storage: types.Storage{Links: []types.Link{
		{Node: types.Node{Path: "/etc/a"}, LinkEmbedded1: types.LinkEmbedded1{Target: &other}}}}})
	if _, err := Compare(withLinks, changed); err == nil {
		t.Error("changing links: accepted")
	}
	luks := parseOK(t, types.Config{Storage: types.Storage{Luks: []types.Luks{{Name: "data", Device: &target}}}})
	if _, err := Compare(luks, without); err == nil || !strings.Contains(err.Error(), "spec.config.storage.luks") {
		t.Errorf("removing LUKS: %v (still refused, docs/parity.md)", err)
	}
}

func TestCompareOSPackagesAndPassword(t *testing.T) {
	h := "$6$a$b"
	d, err := Compare(Config{KernelType: ""}, Config{KernelType: "default", Extensions: []string{"usbguard"}, PasswordHash: h})
	if err != nil || d.KernelTypeChanged || !d.ExtensionsChanged || !d.PasswordHashChanged || !d.OSChanged() {
		t.Errorf("diff %+v, %v", d, err)
	}
}
