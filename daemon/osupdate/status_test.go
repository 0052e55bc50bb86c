package osupdate

import (
	"strings"
	"testing"
)

// A staged container deployment over a booted one, with the fields
// rpm-ostree prints (trimmed).
const rpmOstreeSample = `{
  "deployments": [
    {
      "unlocked": "none",
      "requested-local-packages": [],
      "base-commit-meta": {"ostree.bootable": true, "version": "9.6.20250101-0"},
      "base-removals": [],
      "booted": false,
      "staged": true,
      "id": "rhcos-5f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4.0",
      "osname": "rhcos",
      "pinned": false,
      "container-image-reference-digest": "sha256:e0a1",
      "container-image-reference": "ostree-unverified-registry:quay.io/openshift/os@sha256:e0a1",
      "checksum": "5f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4",
      "serial": 0,
      "timestamp": 1735689600,
      "version": "9.6.20250101-0",
      "requested-packages": []
    },
    {
      "booted": true,
      "staged": false,
      "id": "rhcos-aa11.0",
      "osname": "rhcos",
      "pinned": false,
      "container-image-reference": "ostree-unverified-registry:quay.io/openshift/os@sha256:d9f0",
      "checksum": "aa11",
      "serial": 0,
      "timestamp": 1733011200,
      "version": "9.6.20241201-0"
    },
    {
      "booted": false,
      "id": "fedora-coreos-bb22.1",
      "osname": "fedora-coreos",
      "origin": "fedora:fedora/x86_64/coreos/stable",
      "checksum": "bb22",
      "serial": 1
    }
  ],
  "transaction": null,
  "cached-update": null,
  "update-driver": null
}`

func TestParseRpmOstreeStatus(t *testing.T) {
	st, err := ParseRpmOstreeStatus([]byte(rpmOstreeSample))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Deployments) != 3 {
		t.Fatalf("parsed %+v", st)
	}
	d, i, err := st.Booted()
	if err != nil || i != 1 || d.Image() != "ostree-unverified-registry:quay.io/openshift/os@sha256:d9f0" || d.Version != "9.6.20241201-0" {
		t.Errorf("booted = %+v, %d, %v", d, i, err)
	}
	if s := st.Deployments[0]; !s.Staged || s.ContainerImageReferenceDigest != "sha256:e0a1" || s.OSName != "rhcos" {
		t.Errorf("staged = %+v", s)
	}
	if o := st.Deployments[2].Image(); o != "fedora:fedora/x86_64/coreos/stable" {
		t.Errorf("origin image = %q", o)
	}
	for _, bad := range []struct{ in, err string }{
		{`{"deployments": []}`, "no deployments"},
		{`not json`, "decoding rpm-ostree status --json"},
		{`{"deployments": [{"booted": false, "id": "x"}]}`, ""},
	} {
		st, err := ParseRpmOstreeStatus([]byte(bad.in))
		if bad.err == "" {
			if _, _, err := st.Booted(); err == nil || !strings.Contains(err.Error(), "no booted deployment") {
				t.Errorf("%s: Booted error %v", bad.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("%s: error %v, want %q", bad.in, err, bad.err)
		}
	}
}

// A bootc host with a staged update, as `bootc status --json` prints it.
const bootcSample = `{
  "apiVersion": "org.containers.bootc/v1",
  "kind": "BootcHost",
  "metadata": {"name": "host"},
  "spec": {"image": {"image": "quay.io/fedora/fedora-bootc:41", "transport": "registry"}, "bootOrder": "default"},
  "status": {
    "staged": {
      "image": {"image": {"image": "quay.io/fedora/fedora-bootc:41", "transport": "registry"},
                "version": "41.20250102.0", "timestamp": "2025-01-02T00:00:00Z", "imageDigest": "sha256:bb"},
      "cachedUpdate": null, "incompatible": false, "pinned": false, "store": "ostreeContainer",
      "ostree": {"checksum": "c2", "deploySerial": 0, "stateroot": "default"}
    },
    "booted": {
      "image": {"image": {"image": "quay.io/fedora/fedora-bootc:40", "transport": "registry", "signature": "containerPolicy"},
                "version": "40.20241201.0", "timestamp": null, "imageDigest": "sha256:aa"},
      "cachedUpdate": null, "incompatible": false, "pinned": false, "store": "ostreeContainer",
      "ostree": {"checksum": "c1", "deploySerial": 0, "stateroot": "default"}
    },
    "rollback": null,
    "rollbackQueued": false,
    "type": "bootcHost"
  }
}`

func TestParseBootcStatus(t *testing.T) {
	h, err := ParseBootcStatus([]byte(bootcSample))
	if err != nil {
		t.Fatal(err)
	}
	if !h.BootedFromImage() || h.Status.Rollback != nil || h.Status.Type != "bootcHost" {
		t.Fatalf("parsed %+v", h.Status)
	}
	if got := h.Status.Booted.Image.Image.Ref().String(); got != "ostree-image-signed:registry:quay.io/fedora/fedora-bootc:40" {
		t.Errorf("booted ref %q", got)
	}
	if got := h.Status.Staged.Image.Image.Ref().String(); got != "ostree-unverified-registry:quay.io/fedora/fedora-bootc:41" {
		t.Errorf("staged ref %q", got)
	}
	if h.Status.Staged.Ostree.DeploySerial != 0 || h.Status.Booted.Image.ImageDigest != "sha256:aa" {
		t.Errorf("entries %+v %+v", h.Status.Staged.Ostree, h.Status.Booted.Image)
	}
	// A host not deployed by bootc: booted is null.
	h, err = ParseBootcStatus([]byte(`{"apiVersion":"org.containers.bootc/v1","kind":"BootcHost","metadata":{"name":"host"},` +
		`"spec":{"image":null,"bootOrder":"default"},"status":{"staged":null,"booted":null,"rollback":null,"rollbackQueued":false,"type":null}}`))
	if err != nil || h.BootedFromImage() {
		t.Errorf("non-bootc host: %v, booted from image %v", err, h.BootedFromImage())
	}
	if _, err := ParseBootcStatus([]byte(`{"kind":"Other"}`)); err == nil || !strings.Contains(err.Error(), "want BootcHost") {
		t.Errorf("wrong kind: %v", err)
	}
	remote := BootcImageRef{Image: "quay.io/os", Transport: "registry", Signature: []byte(`{"ostreeRemote":"fedora"}`)}
	if got := remote.Ref().String(); got != "ostree-remote-registry:fedora:quay.io/os" {
		t.Errorf("remote ref %q", got)
	}
}
