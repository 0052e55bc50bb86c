package plan

import (
	"fmt"
	"strings"
)

// ostree container image reference prefixes (signature policy and, for the
// remote forms, the ostree remote), as rpm-ostree and bootc accept them.
const (
	unverifiedRegistry = "ostree-unverified-registry:"
	unverifiedImage    = "ostree-unverified-image:"
	remoteRegistry     = "ostree-remote-registry:"
	remoteImage        = "ostree-remote-image:"
	imageSigned        = "ostree-image-signed:"
)

// transports are the containers-image transports an image URL may name.
func transports() []string {
	return []string{"registry:", "docker://", "oci:", "oci-archive:", "containers-storage:", "dir:"}
}

// ImageRef is an image as an ostree container image reference: signature
// verification (with the ostree remote for remote verification), transport
// and name.
type ImageRef struct {
	// Verify is "unverified", "remote" or "signed".
	Verify string
	// Remote is the ostree remote that verifies the image (Verify "remote").
	Remote string
	// Transport is "registry", "oci", "oci-archive", "containers-storage" or "dir".
	Transport string
	// Name is the image name in its transport, e.g. quay.io/os@sha256:...
	Name string
}

// ParseImage reads an osImageURL, or a reference as rpm-ostree reports it:
// a plain image name (pulled from its registry, unverified), a name with a
// containers-image transport (docker://, oci:, ...), or a full ostree
// reference (ostree-unverified-registry:, ostree-remote-image:, ...).
func ParseImage(url string) (ImageRef, error) {
	s := url
	if s == "" {
		return ImageRef{}, fmt.Errorf("empty image reference")
	}
	if msg := checkImageText(s); msg != "" {
		return ImageRef{}, fmt.Errorf("image reference %q: %s", url, msg)
	}
	r := ImageRef{Verify: "unverified"}
	switch {
	case strings.HasPrefix(s, unverifiedRegistry):
		r.Transport, r.Name = "registry", strings.TrimPrefix(s, unverifiedRegistry)
		return r.check(url)
	case strings.HasPrefix(s, remoteRegistry):
		r.Verify = "remote"
		rest := strings.TrimPrefix(s, remoteRegistry)
		var ok bool
		if r.Remote, r.Name, ok = strings.Cut(rest, ":"); !ok {
			return ImageRef{}, fmt.Errorf("image reference %q: want %s<remote>:<image>", url, remoteRegistry)
		}
		r.Transport = "registry"
		return r.check(url)
	case strings.HasPrefix(s, unverifiedImage):
		s = strings.TrimPrefix(s, unverifiedImage)
	case strings.HasPrefix(s, remoteImage):
		r.Verify = "remote"
		rest := strings.TrimPrefix(s, remoteImage)
		var ok bool
		if r.Remote, s, ok = strings.Cut(rest, ":"); !ok {
			return ImageRef{}, fmt.Errorf("image reference %q: want %s<remote>:<transport>:<image>", url, remoteImage)
		}
	case strings.HasPrefix(s, imageSigned):
		r.Verify = "signed"
		s = strings.TrimPrefix(s, imageSigned)
	default:
		if t, name, ok := cutTransport(s); ok {
			r.Transport, r.Name = t, name
		} else {
			r.Transport, r.Name = "registry", s
		}
		return r.check(url)
	}
	t, name, ok := cutTransport(s)
	if !ok {
		return ImageRef{}, fmt.Errorf("image reference %q: no transport (registry:, docker://, oci:, ...) after the signature policy", url)
	}
	r.Transport, r.Name = t, name
	return r.check(url)
}

// cutTransport splits a containers-image transport off s.
func cutTransport(s string) (transport, name string, ok bool) {
	for _, p := range transports() {
		if rest, found := strings.CutPrefix(s, p); found {
			t := strings.TrimSuffix(strings.TrimSuffix(p, "://"), ":")
			if t == "docker" {
				t = "registry"
			}
			return t, rest, true
		}
	}
	return "", "", false
}

func (r ImageRef) check(url string) (ImageRef, error) {
	if r.Name == "" || strings.HasPrefix(r.Name, "-") {
		return ImageRef{}, fmt.Errorf("image reference %q: bad image name %q", url, r.Name)
	}
	if r.Transport == "registry" {
		if msg := checkImageName(r.Name); msg != "" {
			return ImageRef{}, fmt.Errorf("image reference %q: bad image name %q: %s", url, r.Name, msg)
		}
	}
	if r.Verify == "remote" && !validRemote(r.Remote) {
		return ImageRef{}, fmt.Errorf("image reference %q: bad ostree remote %q (want letters, digits, ., _ and -)", url, r.Remote)
	}
	return r, nil
}

// String is the reference in the form rpm-ostree takes and reports:
// ostree-unverified-registry:<name> for the common case.
func (r ImageRef) String() string {
	switch {
	case r.Verify == "unverified" && r.Transport == "registry":
		return unverifiedRegistry + r.Name
	case r.Verify == "remote" && r.Transport == "registry":
		return remoteRegistry + r.Remote + ":" + r.Name
	}
	t := r.Transport + ":"
	switch r.Verify {
	case "remote":
		return remoteImage + r.Remote + ":" + t + r.Name
	case "signed":
		return imageSigned + t + r.Name
	}
	return unverifiedImage + t + r.Name
}

// SameImage reports whether two image references (URLs or ostree
// references) name the same image the same way.
func SameImage(a, b string) bool {
	ra, errA := ParseImage(a)
	rb, errB := ParseImage(b)
	if errA != nil || errB != nil {
		return strings.TrimSpace(a) == strings.TrimSpace(b)
	}
	return ra == rb
}
