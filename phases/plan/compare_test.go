package plan

import (
	"errors"
	"reflect"
	"testing"
)

func TestCompare(t *testing.T) {
	base := func() Config { return sampleConfig("rendered-worker-new") }
	tests := []struct {
		name   string
		change func(c *Config)
		want   Diff
	}{
		{"nothing", func(c *Config) {}, Diff{}},
		{"file contents", func(c *Config) {
			f := c.Files["/etc/foo.conf"]
			f.Contents = []byte("new")
			c.Files["/etc/foo.conf"] = f
		}, Diff{ChangedFiles: []File{{Path: "/etc/foo.conf", Contents: []byte("new"), Mode: 0o644}}}},
		{"file mode", func(c *Config) {
			f := c.Files["/etc/empty"]
			f.Mode = 0o600
			c.Files["/etc/empty"] = f
		}, Diff{ChangedFiles: []File{{Path: "/etc/empty", Mode: 0o600}}}},
		{"file owner id", func(c *Config) {
			f := c.Files["/etc/owned"]
			f.Group = Owner{ID: ptr(1001)}
			c.Files["/etc/owned"] = f
		}, Diff{ChangedFiles: []File{{Path: "/etc/owned", Contents: []byte("owned"), Mode: 0o644, User: Owner{Name: "core"}, Group: Owner{ID: ptr(1001)}}}}},
		{"file owner name", func(c *Config) {
			f := c.Files["/etc/owned"]
			f.User = Owner{}
			c.Files["/etc/owned"] = f
		}, Diff{ChangedFiles: []File{{Path: "/etc/owned", Contents: []byte("owned"), Mode: 0o644, Group: Owner{ID: ptr(1000)}}}}},
		{"files added and removed, sorted", func(c *Config) {
			c.Files["/etc/z"] = File{Path: "/etc/z", Mode: 0o644}
			c.Files["/etc/a"] = File{Path: "/etc/a", Mode: 0o644}
			delete(c.Files, "/etc/foo.conf")
			delete(c.Files, "/etc/empty")
		}, Diff{
			ChangedFiles: []File{{Path: "/etc/a", Mode: 0o644}, {Path: "/etc/z", Mode: 0o644}},
			RemovedFiles: []string{"/etc/empty", "/etc/foo.conf"},
		}},
		{"unit contents", func(c *Config) {
			u := c.Units["foo.service"]
			u.Contents = ptr("[Service]\n")
			c.Units["foo.service"] = u
		}, Diff{ChangedUnits: []Unit{{Name: "foo.service", Enabled: ptr(true), Contents: ptr("[Service]\n")}}}},
		{"unit enablement", func(c *Config) {
			u := c.Units["bad.service"]
			u.Enabled = ptr(false)
			c.Units["bad.service"] = u
		}, Diff{ChangedUnits: []Unit{{Name: "bad.service", Mask: true, Enabled: ptr(false)}}}},
		{"unit mask", func(c *Config) {
			c.Units["bad.service"] = Unit{Name: "bad.service"}
		}, Diff{ChangedUnits: []Unit{{Name: "bad.service"}}}},
		{"unit dropin", func(c *Config) {
			c.Units["crio.service"] = Unit{Name: "crio.service", Dropins: map[string]string{"10-x.conf": "[Service]\nNice=2\n"}}
		}, Diff{ChangedUnits: []Unit{{Name: "crio.service", Dropins: map[string]string{"10-x.conf": "[Service]\nNice=2\n"}}}}},
		{"unit removed", func(c *Config) {
			delete(c.Units, "bad.service")
		}, Diff{RemovedUnits: []Unit{{Name: "bad.service", Mask: true}}}},
		{"ssh keys reordered", func(c *Config) { c.SSHKeys = map[string]UserKeys{"core": swapped(c.SSHKeys["core"])} },
			Diff{SSHKeys: []UserKeys{swapped(sampleConfig("").SSHKeys["core"])}}},
		{"os image", func(c *Config) { c.OSImageURL = "quay.io/os@sha256:2" }, Diff{OSImageChanged: true}},
		// Appending c a to a a would not give this order: every argument
		// is deleted and the new ones appended, as upstream does.
		{"kernel args in order", func(c *Config) {
			c.KernelArguments = []string{"a", "c", "a", "a"}
		}, Diff{KernelArgsRemoved: []string{"a", "a"}, KernelArgsAdded: []string{"a", "c", "a", "a"}}},
		{"kernel args appended", func(c *Config) {
			c.KernelArguments = []string{"a", "a", "c", "a"}
		}, Diff{KernelArgsAdded: []string{"c", "a"}}},
		{"extensions as a set", func(c *Config) { c.Extensions = []string{"usbguard", "kerberos", "usbguard"} }, Diff{}},
		{"extensions", func(c *Config) { c.Extensions = []string{"kerberos"} }, Diff{ExtensionsChanged: true}},
		{"kernel type default", func(c *Config) { c.KernelType = "default" }, Diff{}},
		{"kernel type", func(c *Config) { c.KernelType = "realtime" }, Diff{KernelTypeChanged: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := base()
			current.KernelArguments = []string{"a", "a"}
			current.Extensions = []string{"kerberos", "usbguard"}
			desired := base()
			desired.KernelArguments = []string{"a", "a"}
			desired.Extensions = []string{"kerberos", "usbguard"}
			tt.change(&desired)
			got, err := Compare(current, desired)
			if err != nil {
				t.Fatalf("Compare: %v", err)
			}
			got = withoutFields(got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Compare:\n got %+v\nwant %+v", got, tt.want)
			}
			if got.Empty() != reflect.DeepEqual(tt.want, Diff{}) {
				t.Errorf("Empty() = %v", got.Empty())
			}
		})
	}
}

func TestCompareKernelArgs(t *testing.T) {
	tests := []struct {
		current, desired []string
		removed, added   []string
	}{
		{nil, nil, nil, nil},
		// A new order is a change, as upstream's generateKargs sees it.
		{[]string{"a", "b"}, []string{"b", "a"}, []string{"a", "b"}, []string{"b", "a"}},
		{[]string{"hugepagesz=1G", "hugepages=4", "hugepagesz=2M", "hugepages=4"},
			[]string{"hugepagesz=1G", "hugepages=4", "hugepagesz=2M", "hugepages=6"},
			[]string{"hugepagesz=1G", "hugepages=4", "hugepagesz=2M", "hugepages=4"},
			[]string{"hugepagesz=1G", "hugepages=4", "hugepagesz=2M", "hugepages=6"}},
		{[]string{"a", "a", "b"}, []string{"a", "c"}, []string{"a", "b"}, []string{"c"}},
		{[]string{"x=1"}, []string{"x=2"}, []string{"x=1"}, []string{"x=2"}},
		{nil, []string{"b", "a", "b"}, nil, []string{"b", "a", "b"}},
	}
	for _, tt := range tests {
		d, err := Compare(Config{KernelArguments: tt.current}, Config{KernelArguments: tt.desired})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(d.KernelArgsRemoved, tt.removed) || !reflect.DeepEqual(d.KernelArgsAdded, tt.added) {
			t.Errorf("%q -> %q: removed %q added %q, want %q %q", tt.current, tt.desired,
				d.KernelArgsRemoved, d.KernelArgsAdded, tt.removed, tt.added)
		}
		if d.OSChanged() != (len(tt.removed)+len(tt.added) > 0) {
			t.Errorf("%q -> %q: OSChanged() = %v", tt.current, tt.desired, d.OSChanged())
		}
	}
}

func TestCompareUnreconcilable(t *testing.T) {
	current := Config{Name: "rendered-worker-old", Unreconcilable: map[string]string{
		"spec.config.storage.disks":           `[{"device":"/dev/sdb"}]`,
		"spec.config.passwd.groups":           `[{"name":"a"}]`,
		"spec.config.storage.links":           `[{"path":"/l"}]`,
		"spec.config.passwd.users[name=core]": `{"name":"core","passwordHash":"x"}`,
	}}
	desired := Config{Name: "rendered-worker-new", Unreconcilable: map[string]string{
		"spec.config.storage.disks":           `[{"device":"/dev/sdc"}]`, // differs
		"spec.config.passwd.groups":           `[{"name":"a"}]`,          // same
		"spec.fips":                           "true",                    // added
		"spec.config.passwd.users[name=core]": `{"name":"core","passwordHash":"x"}`,
		// links removed: allowed, as machine-config-daemon allows it
	}, OSImageURL: "quay.io/os@sha256:2"}
	d, err := Compare(current, desired)
	var ue *UnreconcilableError
	if !errors.As(err, &ue) {
		t.Fatalf("Compare error = %v, want an *UnreconcilableError", err)
	}
	wantFields := []string{"spec.config.storage.disks", "spec.fips"}
	if ue.Object != "rendered-worker-new" || !reflect.DeepEqual(ue.Fields, wantFields) {
		t.Errorf("error = %+v, want fields %q", ue, wantFields)
	}
	want := `MachineConfig "rendered-worker-new" cannot be applied in place: spec.config.storage.disks changed, spec.fips changed`
	if err.Error() != want {
		t.Errorf("Error() = %q\nwant %q", err, want)
	}
	if !d.OSImageChanged {
		t.Error("the diff is not filled in alongside the error")
	}

	// The same sections in both configs are fine.
	if _, err := Compare(current, current); err != nil {
		t.Errorf("Compare(current, current): %v", err)
	}
}

func TestCompareAdoption(t *testing.T) {
	raw := ignitionJSON("3.2.0", sampleBody)
	mc := machineConfig("rendered-worker-abc", raw)
	mc.Spec.OSImageURL = "quay.io/os@sha256:1"
	mc.Spec.KernelArguments = []string{"nosmt"}
	mc.Spec.Extensions = []string{"usbguard"}
	mc.Spec.KernelType = "realtime"
	desired, err := Parse(mc)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Compare(Config{}, desired)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	if len(d.ChangedFiles) != 3 || len(d.ChangedUnits) != 3 || len(d.RemovedFiles) != 0 || len(d.RemovedUnits) != 0 ||
		!d.SSHKeysChanged() || !d.OSImageChanged || !reflect.DeepEqual(d.KernelArgsAdded, []string{"nosmt"}) ||
		!d.ExtensionsChanged || !d.KernelTypeChanged {
		t.Errorf("adoption diff = %+v, want everything changed", d)
	}
	// And back: everything is removed.
	back, err := Compare(desired, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.RemovedFiles) != 3 || len(back.RemovedUnits) != 3 || !reflect.DeepEqual(back.KernelArgsRemoved, []string{"nosmt"}) {
		t.Errorf("reverse diff = %+v", back)
	}
}

func TestCompareAcrossSpecVersions(t *testing.T) {
	old, err := Parse(machineConfig("rendered-worker-old", ignitionJSON("3.0.0", sampleBody)))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Parse(machineConfig("rendered-worker-new", ignitionJSON("3.5.0", sampleBody)))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := Compare(old, cur); err != nil || !d.Empty() {
		t.Errorf("Compare(3.0, 3.5 of the same config) = %+v, %v; want empty", d, err)
	}
}

// withoutFields clears the config entries' field paths, which the table's
// literals leave out.
func withoutFields(d Diff) Diff {
	for i := range d.ChangedFiles {
		d.ChangedFiles[i].Field = ""
	}
	for i := range d.ChangedUnits {
		d.ChangedUnits[i].Field = ""
	}
	for i := range d.RemovedUnits {
		d.RemovedUnits[i].Field = ""
	}
	return d
}

// swapped is k with its first two keys swapped.
func swapped(k UserKeys) UserKeys {
	k.Keys = []string{k.Keys[1], k.Keys[0]}
	return k
}
