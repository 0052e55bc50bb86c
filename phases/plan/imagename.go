package plan

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// checkImageText says what is wrong with the characters of an image
// reference: it is passed as one argument to rpm-ostree or bootc, so it
// must not look like an option or hold spaces or control characters.
func checkImageText(s string) string {
	if strings.HasPrefix(s, "-") {
		return "starts with -, which the OS tools would read as an option"
	}
	if msg := checkText("", s); msg != "" {
		return msg
	}
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return fmt.Sprintf("has white space at byte %d", i)
	}
	return ""
}

// The grammar of container image references (as containers/image and
// distribution/reference read them): [domain[:port]/]path[:tag][@digest].
// Own code: the grammar is a few lines, and a library for it would add a
// module for one check.
const (
	domainPattern    = `^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`
	componentPattern = `^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`
	tagPattern       = `^[\w][\w.-]{0,127}$`
	// digestPattern is the OCI image spec's digest grammar; the length of
	// the encoded part is the registry's to check.
	digestPattern = `^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`
	remotePattern = `^[A-Za-z0-9_][A-Za-z0-9._-]*$`
	// nameMaxLen is the longest repository name (domain and path).
	nameMaxLen = 255
)

// checkImageName says what is wrong with a registry image name, if anything.
func checkImageName(name string) string {
	rest, digest, hasDigest := strings.Cut(name, "@")
	if hasDigest && !regexp.MustCompile(digestPattern).MatchString(digest) {
		return fmt.Sprintf("bad digest %q (want algorithm:encoded, e.g. sha256:<64 hex digits>)", digest)
	}
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		if tag := rest[i+1:]; !regexp.MustCompile(tagPattern).MatchString(tag) {
			return fmt.Sprintf("bad tag %q", tag)
		}
		rest = rest[:i]
	}
	if len(rest) > nameMaxLen {
		return fmt.Sprintf("repository name is %d bytes long; at most %d", len(rest), nameMaxLen)
	}
	comps := strings.Split(rest, "/")
	if len(comps) > 1 && (strings.ContainsAny(comps[0], ".:[") || comps[0] == "localhost") {
		if !regexp.MustCompile(domainPattern).MatchString(comps[0]) {
			return fmt.Sprintf("bad registry host %q", comps[0])
		}
		comps = comps[1:]
	}
	for _, c := range comps {
		if !regexp.MustCompile(componentPattern).MatchString(c) {
			return fmt.Sprintf("bad path component %q (want lower-case letters and digits, separated by ., _, __ or -)", c)
		}
	}
	return ""
}

// validRemote reports whether r can name an ostree remote.
func validRemote(r string) bool {
	return regexp.MustCompile(remotePattern).MatchString(r)
}
