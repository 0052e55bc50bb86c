package osupdate

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// RpmOstreeStatus is the part of `rpm-ostree status --json` the daemon reads.
// Deployments are in ostree's order: the staged or pending one first, then
// the booted one, then the rollback.
type RpmOstreeStatus struct {
	Deployments []Deployment `json:"deployments"`
}

// Deployment is one deployment of `rpm-ostree status --json`.
type Deployment struct {
	ID       string `json:"id"`
	OSName   string `json:"osname"`
	Serial   int    `json:"serial"`
	Checksum string `json:"checksum"`
	Version  string `json:"version"`
	Booted   bool   `json:"booted"`
	Staged   bool   `json:"staged"`
	Pinned   bool   `json:"pinned"`
	// ContainerImageReference is set for deployments of container images,
	// e.g. "ostree-unverified-registry:quay.io/os@sha256:...".
	ContainerImageReference       string `json:"container-image-reference"`
	ContainerImageReferenceDigest string `json:"container-image-reference-digest"`
	// Origin is the ostree refspec of deployments not from a container.
	Origin string `json:"origin"`
	// RequestedPackages are the packages layered on the base (rpm-ostree
	// install, update --install) and RequestedBaseRemovals the base
	// packages removed (override remove), as the origin asks for them.
	RequestedPackages     []string `json:"requested-packages"`
	RequestedBaseRemovals []string `json:"requested-base-removals"`
}

// ParseRpmOstreeStatus decodes `rpm-ostree status --json`.
func ParseRpmOstreeStatus(data []byte) (RpmOstreeStatus, error) {
	var s RpmOstreeStatus
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("decoding rpm-ostree status --json: %w (output %q)", err, cut(string(data), 120))
	}
	if len(s.Deployments) == 0 {
		return s, fmt.Errorf("rpm-ostree status --json lists no deployments")
	}
	return s, nil
}

// Booted returns the booted deployment and its index.
func (s RpmOstreeStatus) Booted() (Deployment, int, error) {
	for i, d := range s.Deployments {
		if d.Booted {
			return d, i, nil
		}
	}
	return Deployment{}, -1, fmt.Errorf("rpm-ostree status lists no booted deployment")
}

// Image is the deployment's image reference, or its origin refspec.
func (d Deployment) Image() string {
	if d.ContainerImageReference != "" {
		return d.ContainerImageReference
	}
	return d.Origin
}

// BootcHost is `bootc status --json`: a BootcHost object.
type BootcHost struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Image *BootcImageRef `json:"image"`
	} `json:"spec"`
	Status struct {
		Staged         *BootcEntry `json:"staged"`
		Booted         *BootcEntry `json:"booted"`
		Rollback       *BootcEntry `json:"rollback"`
		RollbackQueued bool        `json:"rollbackQueued"`
		Type           string      `json:"type"`
	} `json:"status"`
}

// BootcEntry is one boot entry of the host.
type BootcEntry struct {
	Image        *BootcImageStatus `json:"image"`
	Incompatible bool              `json:"incompatible"`
	Pinned       bool              `json:"pinned"`
	Ostree       *struct {
		Checksum     string `json:"checksum"`
		DeploySerial int    `json:"deploySerial"`
	} `json:"ostree"`
}

// BootcImageStatus is an entry's image and the digest pulled.
type BootcImageStatus struct {
	Image       BootcImageRef `json:"image"`
	Version     string        `json:"version"`
	ImageDigest string        `json:"imageDigest"`
}

// BootcImageRef is an image with its transport and signature policy.
type BootcImageRef struct {
	Image     string `json:"image"`
	Transport string `json:"transport"`
	// Signature is "insecure", "containerPolicy" or {"ostreeRemote": name}.
	Signature json.RawMessage `json:"signature,omitempty"`
}

// ParseBootcStatus decodes `bootc status --json`.
func ParseBootcStatus(data []byte) (BootcHost, error) {
	var h BootcHost
	if err := json.Unmarshal(data, &h); err != nil {
		return h, fmt.Errorf("decoding bootc status --json: %w (output %q)", err, cut(string(data), 120))
	}
	if h.Kind != "BootcHost" {
		return h, fmt.Errorf("bootc status --json: kind %q, want BootcHost", h.Kind)
	}
	return h, nil
}

// BootedFromImage reports whether the host booted a bootc image.
func (h BootcHost) BootedFromImage() bool {
	return h.Status.Booted != nil && h.Status.Booted.Image != nil
}

// Next is the entry the next boot brings up: the staged one, the rollback
// one when it is queued, else the booted one (booted is then true).
func (h BootcHost) Next() (e *BootcEntry, booted bool) {
	switch {
	case h.Status.Staged != nil:
		return h.Status.Staged, false
	case h.Status.RollbackQueued && h.Status.Rollback != nil:
		return h.Status.Rollback, false
	}
	return h.Status.Booted, true
}

// Ref is the image as an ostree container reference, comparable with
// SameImage.
func (r BootcImageRef) Ref() plan.ImageRef {
	ref := plan.ImageRef{Verify: "unverified", Transport: r.Transport, Name: r.Image}
	if ref.Transport == "" {
		ref.Transport = "registry"
	}
	var remote struct {
		OstreeRemote string `json:"ostreeRemote"`
	}
	var policy string
	switch {
	case json.Unmarshal(r.Signature, &policy) == nil && policy == "containerPolicy":
		ref.Verify = "signed"
	case json.Unmarshal(r.Signature, &remote) == nil && remote.OstreeRemote != "":
		ref.Verify, ref.Remote = "remote", remote.OstreeRemote
	}
	return ref
}

// cut shortens s to at most n bytes for an error message, at a character
// boundary, saying how much was cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... [%d more bytes]", s[:n], len(s)-n)
}
