package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// BenchmarkHostileSizes measures the daemon's peak memory (VmHWM, the
// resident high-water mark since it started) on the worst configs the size
// caps let through, to size the DaemonSet's memory limit. Each iteration
// rolls out, from the config the node runs:
//   - bombs: eight gzip files of 128 MiB of zeros (1 GiB in a 1.3 MiB
//     object), refused in prepare;
//   - at caps: four files of 16 MiB (64 MiB, the default config cap) in
//     /etc/containers/registries.d (a CRI-O reload, no reboot), written,
//     checked and watched for drift. From the second iteration on, the
//     current config is at the caps too, and its files are backed up and
//     journaled while being overwritten: the worst update.
//
// peak-RSS-MiB-bombs is the high-water mark after the first bombs (from an
// empty config), peak-RSS-MiB the one after the last update at the caps;
// idle-RSS-MiB is the daemon's resident memory once it idles on a config at
// the caps.
func BenchmarkHostileSizes(b *testing.B) {
	n, _, _ := benchNode(b, "bench-size")
	ctx := context.Background()
	pid, err := daemonPID(n.Name)
	if err != nil {
		b.Fatal(err)
	}
	log, err := bed.RecordStatus(ctx, n.Name)
	if err != nil {
		b.Fatal(err)
	}
	hwm := func() float64 {
		mem, err := memoryMiB(pid)
		if err != nil {
			b.Fatal(err)
		}
		return mem["VmHWM"]
	}
	bombs := bombsIgnition()
	var afterBombs, afterCaps, idle float64
	iters := 0
	for b.Loop() {
		iters++
		ictx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		name := fmt.Sprintf("rendered-bench-size-bombs-%d", iters)
		if err := bed.CreateConfig(ictx, testbed.MachineConfig(name, bombs)); err != nil {
			b.Fatalf("creating %s: %v", name, err)
		}
		from := log.Len()
		if err := n.SetDesired(ictx, name); err != nil {
			b.Fatal(err)
		}
		if _, err := log.WaitStatus(ictx, from, refused(name, "spec.config.storage.files[0].contents")); err != nil {
			b.Fatalf("waiting for %s to be refused: %v", name, err)
		}
		if iters == 1 { // the high-water mark never falls: later ones count the configs at the caps
			afterBombs = hwm()
		}

		name = fmt.Sprintf("rendered-bench-size-caps-%d", iters)
		if err := bed.CreateConfig(ictx, atCapsConfig(name, iters)); err != nil {
			b.Fatalf("creating %s: %v", name, err)
		}
		w := watchMCN(ictx, b, n.Name)
		if err := n.SetDesired(ictx, name); err != nil {
			b.Fatal(err)
		}
		if _, err := waitUpdated(ictx, w, name); err != nil {
			b.Fatal(err)
		}
		afterCaps = max(afterCaps, hwm())
		settle(ictx, b, n, quiet)
		mem, err := memoryMiB(pid)
		if err != nil {
			b.Fatal(err)
		}
		idle = max(idle, mem["VmRSS"])
		cancel()
	}
	b.ReportMetric(afterBombs, "peak-RSS-MiB-bombs")
	b.ReportMetric(afterCaps, "peak-RSS-MiB")
	b.ReportMetric(idle, "idle-RSS-MiB")
	b.ReportMetric(float64(len(bombs))/(1<<20), "bombs-object-MiB")
}

// refused matches a status that refuses config in prepare, naming field.
func refused(config, field string) func(mcfgv1.MachineConfigNodeStatus) bool {
	return func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "UpdateCompatible")
		return c != nil && c.Status == "False" && strings.Contains(c.Message, config) && strings.Contains(c.Message, field)
	}
}

// bombsIgnition holds eight gzip files of 128 MiB of zeros.
func bombsIgnition() string {
	src := "data:;base64," + base64.StdEncoding.EncodeToString(gzipped(io.LimitReader(zeroReader{}, 128<<20)))
	var files []string
	for i := range 8 {
		files = append(files, fmt.Sprintf(`{"path":"/etc/bench-bomb%d","contents":{"compression":"gzip","source":%q}}`, i, src))
	}
	return `{"ignition":{"version":"3.4.0"},"storage":{"files":[` + strings.Join(files, ",") + `]}}`
}

// atCapsConfig holds four files of exactly the file cap, the config cap in
// all; iteration tells the configs apart.
func atCapsConfig(name string, iteration int) *mcfgv1.MachineConfig {
	var files []string
	for i := range plan.DefaultMaxConfigSize / plan.DefaultMaxFileSize {
		line := fmt.Sprintf("# line of file %d at the cap, iteration %d\n", i, iteration)
		data := strings.Repeat(line, plan.DefaultMaxFileSize/len(line)+1)[:plan.DefaultMaxFileSize]
		src := "data:;base64," + base64.StdEncoding.EncodeToString(gzipped(strings.NewReader(data)))
		files = append(files, fmt.Sprintf(`{"path":"/etc/containers/registries.d/bench-full%d.yaml","mode":420,"overwrite":true,"contents":{"compression":"gzip","source":%q}}`, i, src))
	}
	return testbed.MachineConfig(name, `{"ignition":{"version":"3.4.0"},"storage":{"files":[`+strings.Join(files, ",")+`]}}`)
}

func gzipped(r io.Reader) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := io.Copy(zw, r); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
