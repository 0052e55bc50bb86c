package plan

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The peak-RSS benchmarks parse one hostile config in a child process (this
// test binary, running TestParseChild) and report the child's peak resident
// memory (VmHWM), so that nothing the parent allocated, and
// no earlier iteration, counts. empty is the child's own floor: it reads
// the config but parses nothing.

const parseChildEnv = "NODECONFD_PARSE_CHILD"

// hostileConfigs are the raw Ignition configs of the benchmarks.
func hostileConfigs(b testing.TB) map[string]string {
	bombSrc := bomb(b, 128<<20) // 128 MiB of zeros: about 174 KB of base64
	var bombs []string
	for i := range 8 {
		bombs = append(bombs, fmt.Sprintf(`{"path":"/etc/bomb%d","contents":{"compression":"gzip","source":%q}}`, i, bombSrc))
	}
	// At the caps: four files of 16 MiB, 64 MiB in all, in a small object.
	var full []string
	for i := range 4 {
		line := fmt.Sprintf("line %d of a file at the cap\n", i)
		full = append(full, fmt.Sprintf(`{"path":"/etc/full%d","contents":{"compression":"gzip","source":%q}}`, i,
			gzipB64(b, strings.Repeat(line, DefaultMaxFileSize/len(line)+1)[:DefaultMaxFileSize])))
	}
	return map[string]string{
		"bombs":   ignitionJSON("3.5.0", `"storage":{"files":[`+strings.Join(bombs, ",")+`]}`),
		"at-caps": ignitionJSON("3.5.0", `"storage":{"files":[`+strings.Join(full, ",")+`]}`),
	}
}

// TestParseChild is the child of the peak-RSS benchmarks; it does nothing
// in a normal test run.
func TestParseChild(t *testing.T) {
	spec := os.Getenv(parseChildEnv)
	if spec == "" {
		t.Skip("only run by the peak-RSS benchmarks")
	}
	// spec is "<file>:<max file size>:<max config size>[:noparse]".
	parts := strings.Split(spec, ":")
	raw, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) > 3 {
		printHWM(t)
		return
	}
	fileCap, _ := strconv.ParseInt(parts[1], 10, 64)
	configCap, _ := strconv.ParseInt(parts[2], 10, 64)
	cfg, err := ParseWithLimits(machineConfig("hostile", string(raw)), Limits{MaxFileSize: fileCap, MaxConfigSize: configCap})
	var n int
	for _, f := range cfg.Files {
		n += len(f.Contents)
	}
	fmt.Printf("decoded %d bytes, error: %v\n", n, err)
	printHWM(t)
}

// printHWM prints the process's peak RSS (VmHWM, in kB) for the parent.
func printHWM(t *testing.T) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			fmt.Println(line)
		}
	}
}

// BenchmarkParsePeakRSS: eight gzip files of 128 MiB of zeros (1 GiB in a
// 1.4 MB object) are refused at the default caps; without caps (the
// streamed decoder with both caps at 1 TiB) they decode to 1 GiB. at-caps
// is the largest config accepted by default: four files of 16 MiB.
func BenchmarkParsePeakRSS(b *testing.B) {
	dir := b.TempDir()
	configs := hostileConfigs(b)
	for name, raw := range configs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(raw), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	const noCap = 1 << 40
	cases := []struct {
		name, config string
		fileCap      int64
		configCap    int64
		noParse      bool
	}{
		{"empty", "bombs", 0, 0, true},
		{"bombs", "bombs", 0, 0, false},
		{"bombs-no-cap", "bombs", noCap, noCap, false},
		{"at-caps", "at-caps", 0, 0, false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			spec := fmt.Sprintf("%s:%d:%d", filepath.Join(dir, c.config), c.fileCap, c.configCap)
			if c.noParse {
				spec += ":noparse"
			}
			var peak int64
			for b.Loop() {
				peak = max(peak, childPeakRSS(b, spec))
			}
			b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
			b.ReportMetric(float64(len(configs[c.config]))/(1<<20), "object-MiB")
		})
	}
}

// childPeakRSS runs TestParseChild with spec and returns its peak RSS in
// KiB: the VmHWM it prints (getrusage's ru_maxrss of a child counts the
// parent's memory it was forked from).
func childPeakRSS(b *testing.B, spec string) int64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestParseChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), parseChildEnv+"="+spec)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.Fatalf("child: %v\n%s", err, out.Bytes())
	}
	if !bytes.Contains(out.Bytes(), []byte("PASS")) {
		b.Fatalf("child did not pass:\n%s", out.Bytes())
	}
	_, rest, ok := bytes.Cut(out.Bytes(), []byte("VmHWM:"))
	var kb int64
	if _, err := fmt.Sscan(string(rest), &kb); !ok || err != nil {
		b.Fatalf("no VmHWM in the child's output:\n%s", out.Bytes())
	}
	return kb
}
