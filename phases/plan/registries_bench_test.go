package plan

import (
	"fmt"
	"strings"
	"testing"
)

// registriesConfOf returns a registries.conf of n registries, each with two
// digest-only mirrors, as an ImageDigestMirrorSet renders them; extra
// appends one more digest-only mirror to the last registry.
func registriesConfOf(n int, extra bool) []byte {
	var b strings.Builder
	b.WriteString(`unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]` + "\n")
	for i := range n {
		fmt.Fprintf(&b, "\n[[registry]]\nprefix = \"\"\nlocation = \"quay.io/team%d/app\"\n", i)
		for j := range 2 {
			fmt.Fprintf(&b, "[[registry.mirror]]\nlocation = \"mirror%d.example.com/team%d/app\"\npull-from-mirror = \"digest-only\"\n", j, i)
		}
	}
	if extra {
		fmt.Fprintf(&b, "[[registry.mirror]]\nlocation = \"mirror9.example.com/team%d/app\"\npull-from-mirror = \"digest-only\"\n", n-1)
	}
	return []byte(b.String())
}

// BenchmarkRegistriesChange decides a 500-entry registries.conf whose new
// version adds one digest-only mirror (safe): both files decoded and
// compared.
func BenchmarkRegistriesChange(b *testing.B) {
	old, new := registriesConfOf(500, false), registriesConfOf(500, true)
	if unsafe, err := RegistriesChange(old, new); unsafe != "" || err != nil {
		b.Fatalf("RegistriesChange = %q, %v; want safe", unsafe, err)
	}
	b.SetBytes(int64(len(old) + len(new)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RegistriesChange(old, new); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(new))/1024, "file-KiB")
}

// BenchmarkValidateRegistriesConf checks the same 500-entry file.
func BenchmarkValidateRegistriesConf(b *testing.B) {
	cfg := Config{Name: "bench", Files: map[string]File{
		RegistriesConfPath: {Path: RegistriesConfPath, Contents: registriesConfOf(500, true)},
	}}
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidateRegistriesConf(cfg); err != nil {
			b.Fatal(err)
		}
	}
}
