package fuzz

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// seed is one hand-written input of FuzzApply.
type seed struct {
	name           string
	ignition       string
	kargs, osImage string
	withBase       bool
	// write marks a config that must be written (TestSeedsWritten),
	// refuse one that must be refused in prepare (TestSeedsRefused).
	write, refuse bool
}

// ign34 wraps Ignition 3.4 members into a config.
func ign34(members ...string) string {
	return `{"ignition":{"version":"3.4.0"}` + strings.Join(append([]string{""}, members...), ",") + `}`
}

// files is a storage section of the given file objects.
func files(fs ...string) string { return `"storage":{"files":[` + strings.Join(fs, ",") + `]}` }

// file is a file object with inline contents and extra members.
func file(path, data string, extra ...string) string {
	return fmt.Sprintf(`{"path":%q,"contents":{"source":"data:;base64,%s"}%s}`, path,
		base64.StdEncoding.EncodeToString([]byte(data)), strings.Join(append([]string{""}, extra...), ","))
}

func gzipped(data []byte) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// seeds are the hand-written inputs that pass on main: the configs of
// the e2e tests (good and bad), each Ignition feature the daemon applies,
// and the hostile inputs that are already refused in prepare.
func seeds() []seed {
	canary := file("/etc/nodeconfd-canary/fuzz", "canary")
	sum := sha256.Sum256([]byte("hashed\n"))
	return []seed{
		{name: "empty"},
		{name: "empty-from-base", write: true, withBase: true},
		{name: "minimal", write: true, ignition: ign34()},
		{name: "one-file", write: true, ignition: ign34(files(file("/etc/foo.conf", "foo\n")))},
		{name: "one-file-from-base", write: true, ignition: ign34(files(file("/etc/base/a.conf", "changed\n"))), withBase: true},
		{name: "owners-by-name", write: true, ignition: ign34(files(file("/etc/owned", "x", `"user":{"name":"core"}`, `"group":{"name":"wheel"}`)))},
		{name: "owners-by-id", write: true, ignition: ign34(files(file("/etc/owned", "x", `"user":{"id":1000}`, `"group":{"id":10}`)))},
		{name: "setuid-sticky", write: true, ignition: ign34(files(file("/etc/suid", "x", `"mode":3565`)))},
		{name: "gzip", write: true, ignition: ign34(files(fmt.Sprintf(`{"path":"/etc/z","contents":{"compression":"gzip","source":"data:;base64,%s"}}`,
			gzipped(bytes.Repeat([]byte("z"), 1<<16)))))},
		{name: "hash", write: true, ignition: ign34(files(fmt.Sprintf(`{"path":"/etc/h","contents":{"source":"data:,hashed%%0A","verification":{"hash":"sha256-%s"}}}`,
			hex.EncodeToString(sum[:]))))},
		{name: "unit-dropin-enabled", write: true, ignition: ign34(`"systemd":{"units":[{"name":"foo.service","enabled":true,` +
			`"contents":"[Service]\nExecStart=/bin/true\n","dropins":[{"name":"10-a.conf","contents":"[Service]\nNice=2\n"}]}]}`)},
		{name: "unit-masked", write: true, ignition: ign34(`"systemd":{"units":[{"name":"bar.service","mask":true}]}`)},
		{name: "unit-instance", write: true, ignition: ign34(`"systemd":{"units":[{"name":"getty@tty9.service","contents":"[Unit]\n"}]}`)},
		{name: "ssh-keys", write: true, ignition: ign34(`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA k1","ssh-rsa AAAA k2"]}]}`)},
		{name: "ssh-keys-from-base", write: true, ignition: ign34(`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA new"]}]}`), withBase: true},
		{name: "old-spec-3.0", write: true, ignition: `{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/old","contents":{"source":"data:,old"}}]}}`},
		// Refused in prepare already on main.
		{name: "bad-json", ignition: ign34(`"storage":{"files":"not-a-list"}`)},
		{name: "bad-version", ignition: `{"ignition":{"version":"2.2.0"}}`},
		{name: "truncated", ignition: `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x"`},
		{name: "dotdot", ignition: ign34(files(canary, file("/etc/a/../../etc/shadow", "x")))},
		{name: "relative", ignition: ign34(files(canary, file("etc/rel", "x")))},
		{name: "root-path", ignition: ign34(files(canary, file("/", "x")))},
		{name: "mode-too-big", ignition: ign34(files(canary, file("/etc/m", "x", `"mode":65535`)))},
		{name: "mode-negative", ignition: ign34(files(canary, file("/etc/m", "x", `"mode":-1`)))},
		{name: "disks", ignition: ign34(`"storage":{"files":[` + canary + `],"disks":[{"device":"/dev/vdb","wipeTable":true}]}`)},
		{name: "links", ignition: ign34(`"storage":{"links":[{"path":"/etc/l","target":"/etc/shadow"}]}`)},
		{name: "append", ignition: ign34(files(`{"path":"/etc/ap","append":[{"source":"data:,more"}]}`))},
		{name: "http-source", ignition: ign34(files(canary, `{"path":"/etc/r","contents":{"source":"http://example.com/x"}}`))},
		{name: "bad-hash", ignition: ign34(files(canary, `{"path":"/etc/h","contents":{"source":"data:,x","verification":{"hash":"sha256-00"}}}`))},
		{name: "bad-gzip", ignition: ign34(files(canary, `{"path":"/etc/z","contents":{"compression":"gzip","source":"data:,notgzip"}}`))},
		{name: "unknown-member", ignition: `{"ignition":{"version":"3.4.0"},"x":1}`},
		{name: "bad-unit-type", ignition: ign34(`"systemd":{"units":[{"name":"foo.exe","contents":"x"}]}`)},
		{name: "bad-dropin", ignition: ign34(`"systemd":{"units":[{"name":"foo.service","dropins":[{"name":"../x.conf","contents":"x"}]}]}`)},
		{name: "other-user", ignition: ign34(`"passwd":{"users":[{"name":"bob","sshAuthorizedKeys":["ssh-ed25519 AAAA bob"]}]}`)},
		{name: "kargs-no-updater", ignition: ign34(), kargs: "quiet\nfoo=bar baz"},
		{name: "os-image-no-updater", ignition: ign34(), osImage: "quay.io/example/os@sha256:" + strings.Repeat("a", 64)},
		{name: "os-image-option", ignition: ign34(), osImage: "--help"},
		{name: "kargs-unbalanced", ignition: ign34(), kargs: `foo="bar`},
		// Over the count caps (phases/plan/limits.go), refused before any
		// entry is looked at (issue 27).
		{name: "path-too-deep", refuse: true, ignition: ign34(files(canary, file("/etc"+strings.Repeat("/d", 64), "x")))},
		{name: "path-deepest", write: true, ignition: ign34(files(file("/etc"+strings.Repeat("/d", 62), "x")))},
		{name: "too-many-files", refuse: true, ignition: ign34(files(manyFiles(canary, 4097)...))},
		{name: "too-many-units", refuse: true, ignition: ign34(`"systemd":{"units":[` + manyUnits(2049) + `]}`)},
	}
}

// manyFiles is first and n-1 more empty files.
func manyFiles(first string, n int) []string {
	out := []string{first}
	for i := 1; i < n; i++ {
		out = append(out, fmt.Sprintf(`{"path":"/etc/many/%d","contents":{"source":"data:,"}}`, i))
	}
	return out
}

// manyUnits is n unit objects.
func manyUnits(n int) string {
	us := make([]string, n)
	for i := range us {
		us[i] = fmt.Sprintf(`{"name":"many-%d.service","contents":"[Unit]\n"}`, i)
	}
	return strings.Join(us, ",")
}
