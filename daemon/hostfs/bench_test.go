package hostfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Benchmarks of 1,000 files of 4 KiB. The Txn ones overwrite files the
// daemon already manages, as every update after the first does; a first
// write of a new path costs one more file create (its no-original marker),
// measured by BenchmarkWriteFilesNew1000.

func benchFiles(dir string) []plan.File {
	data := bytes.Repeat([]byte("0123456789abcdef"), 256) // 4 KiB
	files := make([]plan.File, 1000)
	for i := range files {
		files[i] = plan.File{
			Path: fmt.Sprintf("%s/f%04d.conf", dir, i), Contents: data, Mode: 0o644,
			User: plan.Owner{Name: "core"}, Group: plan.Owner{Name: "core"},
		}
	}
	return files
}

func txnWrite(b *testing.B, f *FS, id string, files []plan.File, oneByOne bool) {
	tx, err := f.BeginTxn(id)
	if err != nil {
		b.Fatal(err)
	}
	if oneByOne {
		for _, file := range files {
			if err := tx.WriteFile(file); err != nil {
				b.Fatal(err)
			}
		}
	} else if err := tx.WriteFiles(files); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWriteFiles1000: one transaction, one Txn.WriteFiles call (one
// journal fsync), commit.
func BenchmarkWriteFiles1000(b *testing.B) {
	_, f := newNode(b)
	files := benchFiles("/etc/bench")
	txnWrite(b, f, "setup", files, false)
	b.ResetTimer()
	for i := range b.N {
		txnWrite(b, f, fmt.Sprint("bench-", i), files, false)
	}
}

// BenchmarkTxnWriteFileLoop1000: the same with one Txn.WriteFile call per
// file, so one journal fsync per file.
func BenchmarkTxnWriteFileLoop1000(b *testing.B) {
	_, f := newNode(b)
	files := benchFiles("/etc/bench")
	txnWrite(b, f, "setup", files, false)
	b.ResetTimer()
	for i := range b.N {
		txnWrite(b, f, fmt.Sprint("bench-", i), files, true)
	}
}

// BenchmarkWriteFilesNew1000: like BenchmarkWriteFiles1000, on new paths.
func BenchmarkWriteFilesNew1000(b *testing.B) {
	_, f := newNode(b)
	for i := range b.N {
		txnWrite(b, f, fmt.Sprint("bench-", i), benchFiles(fmt.Sprint("/etc/bench", i)), false)
	}
}

// BenchmarkBareAtomicWrite1000 is the baseline: a plain temp, fsync,
// rename loop over the same files with os functions and no root.
func BenchmarkBareAtomicWrite1000(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "etc/bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	files := benchFiles(dir)
	b.ResetTimer()
	for range b.N {
		bareWrite(b, files)
	}
}

// BenchmarkWrite1000VsBare runs Txn.WriteFiles and the bare loop on the same
// files side by side, alternating which goes first, and reports both and
// their ratio (the target: at most 1.3).
func BenchmarkWrite1000VsBare(b *testing.B) {
	root, f := newNode(b)
	files := benchFiles("/etc/bench")
	txnWrite(b, f, "setup", files, false)
	bare := benchFiles(filepath.Join(root, "bare"))
	if err := os.MkdirAll(filepath.Join(root, "bare"), 0o755); err != nil {
		b.Fatal(err)
	}
	var ours, base time.Duration
	i := 0
	for b.Loop() {
		runOurs := func() {
			start := time.Now()
			txnWrite(b, f, fmt.Sprint("bench-", i), files, false)
			ours += time.Since(start)
		}
		runBare := func() {
			start := time.Now()
			bareWrite(b, bare)
			base += time.Since(start)
		}
		if i%2 == 0 {
			runOurs()
			runBare()
		} else {
			runBare()
			runOurs()
		}
		i++
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(i), "ms/txn")
	b.ReportMetric(float64(base.Milliseconds())/float64(i), "ms/bare")
	b.ReportMetric(float64(ours)/float64(base), "txn/bare")
}

func bareWrite(b *testing.B, files []plan.File) {
	for _, file := range files {
		tmp := file.Path + ".tmp"
		fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fh.Write(file.Contents); err != nil {
			b.Fatal(err)
		}
		if err := fh.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := fh.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, file.Path); err != nil {
			b.Fatal(err)
		}
	}
}
