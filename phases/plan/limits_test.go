package plan

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
)

// bomb returns a data URL of n zero bytes, gzipped.
func bomb(t testing.TB, n int64) string {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(zw, io.LimitReader(zeros{}, n)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return "data:;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func plainFile(path string, n int) string {
	return fmt.Sprintf(`{"path":%q,"contents":{"source":%q}}`, path, b64(strings.Repeat("x", n)))
}

func gzipFile(t testing.TB, path string, n int64) string {
	return fmt.Sprintf(`{"path":%q,"contents":{"compression":"gzip","source":%q}}`, path, bomb(t, n))
}

func TestParseSizeCaps(t *testing.T) {
	small := Limits{MaxFileSize: 1024, MaxConfigSize: 4096}
	files := func(entries ...string) string {
		return ignitionJSON("3.5.0", `"storage":{"files":[`+strings.Join(entries, ",")+`]}`)
	}
	withAppend := func(n, m int) string {
		return fmt.Sprintf(`{"path":"/etc/app","contents":{"source":%q},"append":[{"source":"data:,"},{"source":%q}]}`,
			b64(strings.Repeat("a", n)), b64(strings.Repeat("b", m)))
	}
	unit := func(n int) string {
		c := "[Unit]\n"
		for len(c) < n {
			c += "#" + strings.Repeat("u", min(62, n-len(c)-2)) + "\n"
		}
		return fmt.Sprintf(`"systemd":{"units":[{"name":"a.service","contents":%q}]}`, c)
	}
	keys := func(n int) string {
		return fmt.Sprintf(`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":[%q]}]}`, strings.Repeat("k", n-1))
	}
	tests := []struct {
		name  string
		raw   string
		field string // "" means accepted
	}{
		{"file at the cap", files(plainFile("/etc/a", 1024)), ""},
		{"file one byte over", files(plainFile("/etc/a", 1025)), "spec.config.storage.files[0].contents"},
		{"gzip file at the cap", files(gzipFile(t, "/etc/a", 1024)), ""},
		{"gzip file one byte over", files(plainFile("/etc/ok", 1), gzipFile(t, "/etc/a", 1025)), "spec.config.storage.files[1].contents"},
		{"appends at the cap", files(withAppend(1000, 24)), ""},
		{"append one byte over", files(withAppend(1000, 25)), "spec.config.storage.files[0].append[1]"},
		{"total at the cap", files(plainFile("/etc/a", 1024), plainFile("/etc/b", 1024), plainFile("/etc/c", 1024), plainFile("/etc/d", 1024)), ""},
		{"total one byte over", files(plainFile("/etc/a", 1024), plainFile("/etc/b", 1024), plainFile("/etc/c", 1024),
			plainFile("/etc/d", 1023), plainFile("/etc/e", 2)), "spec.config.storage.files"},
		{"gzip total over", files(gzipFile(t, "/etc/a", 1024), gzipFile(t, "/etc/b", 1024), gzipFile(t, "/etc/c", 1024),
			gzipFile(t, "/etc/d", 1024), gzipFile(t, "/etc/e", 1)), "spec.config.storage.files"},
		{"unit counts toward the total", ignitionJSON("3.5.0", unit(1024)+`,"storage":{"files":[`+
			strings.Join([]string{plainFile("/etc/a", 1024), plainFile("/etc/b", 1024), plainFile("/etc/c", 1024)}, ",")+`]}`), ""},
		{"unit plus files over", ignitionJSON("3.5.0", unit(1025)+`,"storage":{"files":[`+
			strings.Join([]string{plainFile("/etc/a", 1024), plainFile("/etc/b", 1024), plainFile("/etc/c", 1024)}, ",")+`]}`),
			"spec.config.storage.files"},
		{"unit alone over the total", ignitionJSON("3.5.0", unit(4097)), "spec.config.systemd.units[0].contents"},
		{"SSH keys at the total", ignitionJSON("3.5.0", keys(4096)), ""},
		{"SSH keys over the total", ignitionJSON("3.5.0", keys(4097)), "spec.config.passwd.users[0].sshAuthorizedKeys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseWithLimits(machineConfig("rendered-x", tt.raw), small)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("ParseWithLimits: %v", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v (%d files), want a *ConfigError", err, len(cfg.Files))
			}
			if ce.Object != "rendered-x" || ce.Field != tt.field || !strings.Contains(ce.Msg, "cap") {
				t.Errorf("error = %v, want one naming %s and the cap", err, tt.field)
			}
		})
	}
}

func TestParseAppendsIntoOneBuffer(t *testing.T) {
	raw := ignitionJSON("3.5.0", `"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,one%0A"},
		"append":[{"source":"data:;base64,dHdvCg=="},{"compression":"gzip","source":`+fmt.Sprintf("%q", gzipB64(t, "three\n"))+`}]}]}`)
	cfg, err := Parse(machineConfig("m", raw))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Files["/etc/a"].Contents
	if string(c) != "one\ntwo\nthree\n" || cap(c) != len(c) {
		t.Errorf("contents %q (cap %d), want one\\ntwo\\nthree\\n in a buffer of its size", c, cap(c))
	}
}

// counting counts the bytes read through it.
type counting struct {
	r io.Reader
	n int64
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestBombStopsOneBytePastTheCap(t *testing.T) {
	src := bomb(t, 4*DefaultMaxFileSize)
	gz := "gzip"
	rd, prob := openResource(types.Resource{Source: &src, Compression: &gz})
	if prob != nil {
		t.Fatal(prob.Msg)
	}
	c := &counting{r: rd}
	const limit = DefaultMaxFileSize
	n, err := measureStream(c, limit, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != limit+1 || c.n > limit+1 {
		t.Errorf("measured %d, decoded %d bytes; want %d, at most %d", n, c.n, limit+1, limit+1)
	}
}

// TestParseBombsAllocatesLittle parses eight gzip files of 64 MiB of zeros
// each (a 512 MiB config in about 700 KB): they are refused after decoding
// at most the caps, and the parse allocates a few MiB, not the contents.
func TestParseBombsAllocatesLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 64 MiB")
	}
	src := bomb(t, 4*DefaultMaxFileSize)
	var entries []string
	for i := range 8 {
		entries = append(entries, fmt.Sprintf(`{"path":"/etc/bomb%d","contents":{"compression":"gzip","source":%q}}`, i, src))
	}
	mc := machineConfig("bombs", ignitionJSON("3.5.0", `"storage":{"files":[`+strings.Join(entries, ",")+`]}`))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Parse(mc)
	runtime.ReadMemStats(&after)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "spec.config.storage.files[0].contents" {
		t.Fatalf("Parse error = %v, want the first file over the cap", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("Parse allocated %d MiB, want well under the decoded size", alloc>>20)
	}
}

func TestLimitsCheck(t *testing.T) {
	for _, tt := range []struct {
		l  Limits
		ok bool
	}{
		{Limits{}, true},
		{Limits{MaxFileSize: 1, MaxConfigSize: 1}, true},
		{Limits{MaxFileSize: DefaultMaxConfigSize + 1}, false},
		{Limits{MaxConfigSize: DefaultMaxFileSize - 1}, false},
		{Limits{MaxFileSize: -1}, false},
	} {
		if err := tt.l.Check(); (err == nil) != tt.ok {
			t.Errorf("%+v.Check() = %v, want ok %v", tt.l, err, tt.ok)
		}
	}
}

// Issue 27: the count of files, of units and drop-ins, and the depth of a
// path are capped, refused at parse naming the field and the flag.
func TestParseCountCaps(t *testing.T) {
	small := Limits{MaxFiles: 3, MaxUnits: 3, MaxPathDepth: 4}
	files := func(paths ...string) string {
		var es []string
		for _, p := range paths {
			es = append(es, plainFile(p, 1))
		}
		return `"storage":{"files":[` + strings.Join(es, ",") + `]}`
	}
	units := func(n, dropins int) string {
		var us []string
		for i := range n {
			var ds []string
			for j := range dropins {
				ds = append(ds, fmt.Sprintf(`{"name":"%d.conf","contents":"[Unit]\n"}`, j))
			}
			us = append(us, fmt.Sprintf(`{"name":"u%d.service","contents":"[Unit]\n","dropins":[%s]}`, i, strings.Join(ds, ",")))
		}
		return `"systemd":{"units":[` + strings.Join(us, ",") + `]}`
	}
	tests := []struct {
		name, body, field, flag string // field "" means accepted
	}{
		{"files at the cap", files("/etc/a", "/etc/b", "/etc/c"), "", ""},
		{"files over", files("/etc/a", "/etc/b", "/etc/c", "/etc/d"), "spec.config.storage.files", "--max-files"},
		{"units at the cap", units(3, 0), "", ""},
		{"units over", units(4, 0), "spec.config.systemd.units", "--max-units"},
		{"drop-ins count", units(2, 1), "spec.config.systemd.units", "--max-units"},
		{"depth at the cap", files("/etc/a/b/c"), "", ""},
		{"depth over", files("/etc/a", "/etc/a/b/c/d"), "spec.config.storage.files[1].path", "--max-path-depth"},
	}
	for _, tt := range tests {
		_, err := ParseWithLimits(machineConfig("rendered-x", ignitionJSON("3.5.0", tt.body)), small)
		var ce *ConfigError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.field != "" && (!errors.As(err, &ce) || ce.Object != "rendered-x" || ce.Field != tt.field || !strings.Contains(ce.Msg, tt.flag)):
			t.Errorf("%s: %v, want a refusal at %s naming %s", tt.name, err, tt.field, tt.flag)
		}
	}
	// The defaults are far above a real config and hold at their value.
	d := DefaultLimits()
	if d.MaxFiles != DefaultMaxFiles || d.MaxUnits != DefaultMaxUnits || d.MaxPathDepth != DefaultMaxPathDepth {
		t.Errorf("DefaultLimits() = %+v", d)
	}
	if err := (Limits{MaxFiles: -1}).Check(); err == nil {
		t.Error("a negative count cap was accepted")
	}
}
