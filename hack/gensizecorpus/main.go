// Command gensizecorpus writes the size cases of the hostile corpus
// (test/e2e/testdata/hostile/size-*.yaml): MachineConfigs whose decoded
// contents exceed the daemon's default size caps while the objects stay
// small (gzip of zeros compresses about 1,000 times). Run it from the
// repository root:
//
//	go run ./hack/gensizecorpus
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

const mib = 1 << 20

// file is one storage.files entry: contents and appends, each n bytes of
// zeros (gzipped) followed by tail.
type file struct {
	path    string
	parts   []part
	comment string
}

type part struct {
	zeros int64
	tail  string
}

type corpusCase struct {
	variant, field, about string
	files                 []file
	units                 string
}

func main() {
	out := flag.String("out", "test/e2e/testdata/hostile", "folder to write the cases to")
	flag.Parse()
	fileCap, configCap := int64(plan.DefaultMaxFileSize), int64(plan.DefaultMaxConfigSize)
	cases := []corpusCase{
		{variant: "gzip-bomb", field: "spec.config.storage.files[1].contents",
			about: "a gzip file of 128 MiB of zeros (8 times the file cap) in about 170 KB",
			files: []file{{path: "/etc/hostile-size/bomb", parts: []part{{zeros: 128 * mib}}}}},
		{variant: "file-over-by-one", field: "spec.config.storage.files[1].contents",
			about: "a file one byte over the file cap (16 MiB + 1)",
			files: []file{{path: "/etc/hostile-size/big", parts: []part{{zeros: fileCap, tail: "x"}}}}},
		{variant: "append-bomb", field: "spec.config.storage.files[1].append[0]",
			about: "a small file whose append is a gzip bomb of 128 MiB of zeros",
			files: []file{{path: "/etc/hostile-size/appended", parts: []part{{tail: "head"}, {zeros: 128 * mib}}}}},
		{variant: "total-over", field: "spec.config.storage.files",
			about: "four files at the file cap: with the canary, the total is 6 bytes over the config cap",
			files: capFiles(fileCap, configCap/fileCap)},
		{variant: "total-with-unit", field: "spec.config.storage.files",
			about: "files 100 bytes under the config cap and a unit of 200 bytes: unit contents count toward the total",
			files: append(capFiles(fileCap, configCap/fileCap-1),
				file{path: "/etc/hostile-size/last", parts: []part{{zeros: fileCap - 106}}}),
			units: `    systemd:
      units:
        - name: hostile-size.service
          contents: |
            [Unit]
            Description=counts toward the config size cap` + strings.Repeat(".", 200-55) + `
`},
	}
	for _, c := range cases {
		name := "hostile-size-" + c.variant
		data := render(name, c)
		p := filepath.Join(*out, "size-"+c.variant+".yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d bytes\n", p, len(data))
	}
}

// capFiles returns n files of exactly the file cap.
func capFiles(fileCap, n int64) []file {
	var files []file
	for i := range n {
		files = append(files, file{path: fmt.Sprintf("/etc/hostile-size/full%d", i), parts: []part{{zeros: fileCap}}})
	}
	return files
}

func render(name string, c corpusCase) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `# %s (made by hack/gensizecorpus).
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: %s
  annotations:
    nodeconfd.test/field: %q
    nodeconfd.test/state: Degraded
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
        - path: /etc/nodeconfd-canary/%s
          contents:
            source: data:,canary
`, c.about, name, c.field, name)
	for _, f := range c.files {
		fmt.Fprintf(&b, "        - path: %s\n", f.path)
		for i, p := range f.parts {
			switch i {
			case 0:
				b.WriteString("          contents:\n")
				writeResource(&b, "            ", "            ", p)
			case 1:
				b.WriteString("          append:\n")
				fallthrough
			default:
				writeResource(&b, "            - ", "              ", p)
			}
		}
	}
	b.WriteString(c.units)
	return []byte(b.String())
}

// writeResource writes one Ignition resource: first prefixes its first
// line, rest the others.
func writeResource(b *strings.Builder, first, rest string, p part) {
	if p.zeros == 0 {
		fmt.Fprintf(b, "%ssource: %q\n", first, "data:,"+p.tail)
		return
	}
	fmt.Fprintf(b, "%scompression: gzip\n%ssource: data:;base64,%s\n", first, rest, gzipB64(p))
}

func gzipB64(p part) string {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := io.Copy(zw, io.LimitReader(zeros{}, p.zeros)); err != nil {
		log.Fatal(err)
	}
	if _, err := zw.Write([]byte(p.tail)); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
