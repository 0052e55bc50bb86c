package main

import (
	"fmt"
	"testing"
)

// TestMCDConformance ports the upstream machine-config-daemon's decision
// tables (openshift/machine-config-operator pkg/daemon/update_test.go,
// pkg/controller/common/reconcile_test.go, test/e2e-2of2/nodedisrupt_test.go)
// to `nodeconfd plan`: each case names the upstream test and case it ports.
// Upstream's legacy first-boot table (TestCalculatePostConfigChangeAction)
// is checked against the node disruption policy defaults, which nodeconfd
// uses instead. Cases marked "differs" are deliberate differences, written
// down in docs/disruption-policy.md "Decision conformance with the MCD".
func TestMCDConformance(t *testing.T) {
	var cases []mcdCase
	cases = append(cases, machineConfigDiffCases()...)
	cases = append(cases, legacyTableCases()...)
	cases = append(cases, reconcilableCases()...)
	cases = append(cases, policyCases()...)
	cases = append(cases, registriesDrainCases()...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, code := planMCD(t, c)
			checkMCD(t, c, r, code)
		})
	}
}

const (
	mcdImage1 = "quay.io/openshift/os@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	mcdImage2 = "quay.io/openshift/os@sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// Files of TestCalculatePostConfigChangeAction.
const (
	pullSecretPath = "/var/lib/kubelet/config.json"
	registriesPath = "/etc/containers/registries.conf"
	randomPath     = "/etc/random-reboot-file"
	kubeletCAPath  = "/etc/kubernetes/kubelet-ca.crt"
	policyPath     = "/etc/containers/policy.json"
	gpgPath        = "/etc/machine-config-daemon/no-reboot/containers-gpg.pub"
	userCAPath     = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"
	// Upstream's registries.conf contents there ("registries content 1")
	// are not TOML; these are, and the change only adds a search registry,
	// so it is safe for running pods (no drain), as upstream means it.
	registries1 = "unqualified-search-registries = [\"a.io\"]\n"
	registries2 = "unqualified-search-registries = [\"a.io\", \"b.io\"]\n"
)

func files(kv ...string) mcdConfig {
	c := mcdConfig{files: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		c.files[kv[i]] = kv[i+1]
	}
	return c
}

func machineConfigDiffCases() []mcdCase {
	const u = "TestMachineConfigDiff: "
	var tenFiles []string
	for i := range 10 {
		tenFiles = append(tenFiles, fmt.Sprintf("/etc/config%d", i), fmt.Sprintf("config%d", i))
	}
	old := files(tenFiles...)
	return []mcdCase{
		{name: u + "identical empty configs: empty diff", want: wantNone},
		{name: u + "osImageURL set: osUpdate", new: mcdConfig{osImage: mcdImage1}, want: wantReboot},
		{name: u + "kernelArguments nil and empty are equal", old: mcdConfig{kargs: nil}, new: mcdConfig{kargs: []string{}}, want: wantNone},
		{name: u + "SSH key changes recognized - Empty MC", new: mcdConfig{users: core("1234")}, want: wantNone},
		{name: u + "SSH key changes recognized - New Key", old: mcdConfig{users: core("5678")}, new: mcdConfig{users: core("1234")}, want: wantNone},
		// Core's password hash is set in place with the SSH key rule (None).
		{name: u + "PasswordHash changes recognized - Empty MC",
			new:  mcdConfig{users: []map[string]any{{"name": "core", "passwordHash": "testpass"}}},
			want: wantNone},
		{name: u + "PasswordHash changes recognized - Password Change",
			old:  mcdConfig{users: []map[string]any{{"name": "core", "passwordHash": "newtestpass"}}},
			new:  mcdConfig{users: []map[string]any{{"name": "core", "passwordHash": "testpass"}}},
			want: wantNone},
		{name: "TestReconcilableDiff: add file", old: old, new: old.withFile("/etc/config11", "config11"), want: wantReboot},
		{name: "TestReconcilableDiff: remove all files", old: old, new: mcdConfig{}, want: wantReboot},
		{name: "TestReconcilableDiff: os update", old: old, new: mcdConfig{files: old.files, osImage: "example.com/rhel-coreos:new"}, want: wantReboot},
		{name: "TestUpdateSSHKeys: keys for core", new: mcdConfig{users: core("1234", "4567")}, want: wantNone},
		{name: "TestUpdateSSHKeys: empty users change nothing", new: mcdConfig{users: []map[string]any{}}, want: wantNone},
		{name: "TestInvalidIgnConfig: relative path", new: files("home/core/test", "hello world\n"),
			want: refusedAt("spec.config.storage.files[0].path")},
		{name: "TestInvalidIgnConfig: absolute path", new: files("/home/core/test", "hello world\n"), want: wantReboot},
	}
}

// legacyTableCases are TestCalculatePostConfigChangeAction's cases against
// the node disruption policy defaults.
func legacyTableCases() []mcdCase {
	const u = "TestCalculatePostConfigChangeAction: "
	reloadCRIO := crio(false, "Reload crio.service")
	return []mcdCase{
		{name: u + "case#0 a normal file change reboots", old: files(randomPath, "test\n"), new: files(randomPath, "test 2\n"), want: wantReboot},
		{name: u + "case#1 a pull secret change is none", old: files(pullSecretPath, "kubelet conf 1\n"), new: files(pullSecretPath, "kubelet conf 2\n"), want: wantNone},
		{name: u + "case#2 an SSH key change is none", old: mcdConfig{users: core("key1")}, new: mcdConfig{users: core("key2")}, want: wantNone},
		{name: u + "case#3 a registries change reloads CRI-O", old: files(registriesPath, registries1), new: files(registriesPath, registries2), want: crio(false, "Special")},
		{name: u + "case#4 a kubelet CA change is none", old: files(kubeletCAPath, "kubeletCA1\n"), new: files(kubeletCAPath, "kubeletCA2\n"), want: wantNone},
		{name: u + "case#5 registries (reload) overrides pull secret (none)",
			old: files(registriesPath, registries1, pullSecretPath, "kubelet conf 1\n"), new: files(registriesPath, registries2, pullSecretPath, "kubelet conf 2\n"),
			want: crio(false, "Special")},
		{name: u + "case#6 an OS image change (reboot) overrides registries and SSH keys",
			old:  mcdConfig{files: files(registriesPath, registries1).files, users: core("key1"), osImage: mcdImage1},
			new:  mcdConfig{files: files(registriesPath, registries2).files, users: core("key2"), osImage: mcdImage2},
			want: wantReboot},
		{name: u + "case#7 adding a pull secret is none",
			old: mcdConfig{files: files(registriesPath, registries1).files, users: core("key1")},
			new: mcdConfig{files: files(registriesPath, registries1, pullSecretPath, "kubelet conf 2\n").files, users: core("key1")}, want: wantNone},
		// Upstream's legacy table reloads CRI-O with no drain check of the
		// removal; its node disruption policy (Special) drains when the
		// removal drops registries, as this one does (a.io).
		{name: u + "case#8 removing registries.conf reloads CRI-O",
			old: mcdConfig{files: files(randomPath, "test\n", registriesPath, registries1).files, users: core("key1")},
			new: mcdConfig{files: files(randomPath, "test\n").files, users: core("key1")}, want: crio(true, "Special")},
		{name: u + "case#9 mixed: kernel arguments reboot",
			old:  mcdConfig{files: files(registriesPath, registries1).files, users: core("key1")},
			new:  mcdConfig{files: files(pullSecretPath, "kubelet conf 2\n", kubeletCAPath, "kubeletCA1\n").files, users: core("key2"), kargs: []string{"karg1"}},
			want: wantReboot},
		{name: u + "case#10 policy.json reloads CRI-O", old: files(policyPath, "policy1"), new: files(policyPath, "policy2"), want: reloadCRIO},
		{name: u + "case#11 containers-gpg.pub reloads CRI-O", old: files(gpgPath, "containers-gpg1"), new: files(gpgPath, "containers-gpg2"), want: reloadCRIO},
		// The legacy table restarts CRI-O; the policy defaults first restart
		// coreos-update-ca-trust.service, so CRI-O loads the rebuilt store.
		{name: u + "case#12 the user CA bundle restarts CRI-O", old: files(userCAPath, "restart-crio1"), new: files(userCAPath, "restart-crio2"),
			want: crio(false, "Restart coreos-update-ca-trust.service", "Restart crio.service")},
		// The legacy table keeps only the restart; the policy runs every
		// file's actions, files in path order (upstream: Go map order).
		{name: u + "case#13 the user CA bundle restart and a CRI-O reload", old: files(userCAPath, "restart-crio1"),
			new:  files(userCAPath, "restart-crio2", gpgPath, "containers-gpg1"),
			want: crio(false, "Reload crio.service", "Restart coreos-update-ca-trust.service", "Restart crio.service")},
	}
}

func reconcilableCases() []mcdCase {
	const u = "TestIsRenderedConfigReconcilable: "
	disks := map[string]any{"disks": []map[string]any{{"device": "/one"}}}
	fs := map[string]any{"filesystems": []map[string]any{{"device": "/dev/sda1", "format": "ext4", "path": "/foo/bar"}}}
	raid := map[string]any{"raid": []map[string]any{{"name": "data", "level": "stripe", "devices": []string{"/dev/vda", "/dev/vdb"}}}}
	luks := map[string]any{"luks": []map[string]any{{"name": "luks-tang", "device": "/dev/sdb", "clevis": map[string]any{"tang": []map[string]any{{
		"url": "https://tang.example.com", "thumbprint": "TREPLACE-THIS-WITH-YOUR-TANG-THUMBPRINT",
		"advertisement": `{"payload": "...", "protected": "...", "signature": "..."}`}}}}}}
	coreHome := []map[string]any{{"name": "core", "sshAuthorizedKeys": []string{"5678"}, "homeDir": "/somedir"}}
	const s = "TestReconcilableSSH: "
	return []mcdCase{
		{name: u + "Ignition version 4.0.0", new: mcdConfig{version: "4.0.0"}, want: refusedAt("spec.config.ignition.version")},
		{name: u + "Ignition version at the newest", new: mcdConfig{version: "3.5.0"}, want: wantNone},
		{name: u + "Disk changed", old: mcdConfig{storage: disks}, want: refusedAt("spec.config.storage.disks")},
		{name: u + "Disk matched", old: mcdConfig{storage: disks}, new: mcdConfig{storage: disks}, want: wantNone},
		{name: u + "Filesystem changed", old: mcdConfig{storage: fs}, want: refusedAt("spec.config.storage.filesystems")},
		{name: u + "Filesystem matched", old: mcdConfig{storage: fs}, new: mcdConfig{storage: fs}, want: wantNone},
		{name: u + "Raid changed", old: mcdConfig{storage: raid}, want: refusedAt("spec.config.storage.raid")},
		{name: u + "Raid matched", old: mcdConfig{storage: raid}, new: mcdConfig{storage: raid}, want: wantNone},
		{name: u + "PasswdGroups unchanged", want: wantNone},
		{name: u + "PasswdGroups added", new: mcdConfig{groups: []string{"testGroup"}}, want: refusedAt("spec.config.passwd.groups")},
		{name: u + "Ignition KernelArguments", new: mcdConfig{ignArgs: map[string]any{"shouldExist": []string{"foo=bar"}, "shouldNotExist": []string{"baz=foo"}}},
			want: refusedAt("spec.config.kernelArguments")},
		// differs: upstream ignores the luks section (reconcilable, never
		// applied); nodeconfd refuses any change of it (docs/disruption-policy.md).
		{name: u + "LuksClevisTang removed", old: mcdConfig{storage: luks}, want: refusedAt("spec.config.storage.luks")},
		{name: u + "FIPS", new: mcdConfig{fips: true}, want: refusedAt("spec.fips")},
		// nodeconfd refuses every file under /run (emptied at boot).
		{name: u + "forcefile", new: files("/run/machine-config-daemon-force", "x"), want: refusedAt("spec.config.storage.files[0].path")},
		{name: s + "core's keys set", new: mcdConfig{users: core("5678", "abc")}, want: wantNone},
		// differs: upstream refuses any user but core; nodeconfd writes the
		// keys of any user the node has, and its preflight on the node
		// refuses a user the node lacks (docs/parity.md). Off the node,
		// core's keys go and the other user's come: nothing after.
		{name: s + "a user other than core", old: mcdConfig{users: core("1234")},
			new:  mcdConfig{users: []map[string]any{{"name": "another user", "sshAuthorizedKeys": []string{"5678"}}}},
			want: wantNone},
		{name: s + "another field of core", old: mcdConfig{users: core("1234")}, new: mcdConfig{users: coreHome},
			want: refusedAt("spec.config.passwd.users[name=core]")},
		// Refused for core's homeDir; the second user's keys alone would be
		// applied (above).
		{name: s + "a second user", old: mcdConfig{users: core("1234")},
			new:  mcdConfig{users: append(coreHome, map[string]any{"name": "some user", "sshAuthorizedKeys": []string{"5678"}})},
			want: refusedAt("spec.config.passwd.users[name=core]")},
		// Still refused as upstream refuses it: another field of a user
		// other than core (docs/parity.md).
		{name: s + "another field of another user", old: mcdConfig{users: core("1234")},
			new:  mcdConfig{users: append(core("1234"), map[string]any{"name": "ops", "sshAuthorizedKeys": []string{"5678"}, "passwordHash": "$6$x"})},
			want: refusedAt("spec.config.passwd.users[name=ops]")},
		// differs: upstream refuses core with no key left and no password;
		// nodeconfd removes the keys (docs/disruption-policy.md).
		{name: s + "core's only key removed", old: mcdConfig{users: core("1234")}, new: mcdConfig{users: core()}, want: wantNone},
		{name: s + "empty users", old: mcdConfig{users: core("1234")}, new: mcdConfig{}, want: wantNone},
	}
}
