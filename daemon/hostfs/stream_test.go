package hostfs

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

const bigSize = 32 << 20

// bigContents is bigSize bytes that differ from place to place.
func bigContents() []byte {
	return bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstu\n"), bigSize/32)
}

func putBig(t *testing.T, node, rel string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(node, filepath.Dir(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(node, rel), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// allocated returns the bytes fn allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func sum(t *testing.T, p string) [32]byte {
	t.Helper()
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func TestCheckBigFileStreams(t *testing.T) {
	node, f := newNode(t)
	data := bigContents()
	putBig(t, node, "etc/big", data)
	lastDiffers := bytes.Clone(data)
	lastDiffers[len(lastDiffers)-1] = 'x'
	tests := []struct {
		name string
		want []byte
		diff string
	}{
		{"same", data, ""},
		{"other size", []byte("small"), "contents differ (33554432 bytes, want 5)"},
		{"same size, last byte differs", lastDiffers, "contents differ (33554432 bytes, want 33554432)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			alloc := allocated(func() { err = f.CheckFile(plan.File{Path: "/etc/big", Contents: tt.want, Mode: 0o644}) })
			if tt.diff == "" && err != nil || tt.diff != "" && (err == nil || !strings.Contains(err.Error(), tt.diff)) {
				t.Errorf("CheckFile = %v, want %q", err, tt.diff)
			}
			if alloc > 1<<20 {
				t.Errorf("CheckFile allocated %d KiB, want the file streamed", alloc>>10)
			}
		})
	}
}

// TestTxnBigOriginalStreams overwrites a big node file the daemon never
// wrote: its backup and its journaled state are copied as streams (the
// journal itself stays small), and a rollback after a restart puts it back
// byte for byte.
func TestTxnBigOriginalStreams(t *testing.T) {
	node, f := newNode(t)
	putBig(t, node, "etc/big", bigContents())
	before := sum(t, filepath.Join(node, "etc/big"))
	tx, err := f.BeginTxn("big")
	if err != nil {
		t.Fatal(err)
	}
	alloc := allocated(func() {
		err = tx.WriteFiles([]plan.File{{Path: "/etc/big", Contents: []byte("small now\n"), Mode: 0o644}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if alloc > 2<<20 {
		t.Errorf("WriteFiles over a %d MiB file allocated %d KiB, want it streamed", bigSize>>20, alloc>>10)
	}
	if got := sum(t, filepath.Join(node, "var/lib/nodeconfd/orig/etc/big")); got != before {
		t.Error("the original's backup differs from the original")
	}
	fi, err := os.Stat(filepath.Join(node, "var/lib/nodeconfd/txn/big/journal"))
	if err != nil || fi.Size() > 4<<10 {
		t.Fatalf("journal: %v, %d bytes; want a small journal", err, fi.Size())
	}
	tx.Close() // a crash: the transaction stays pending
	tx, err = f.BeginTxn("big")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := sum(t, filepath.Join(node, "etc/big")); got != before {
		t.Error("rollback did not restore the original contents")
	}
	if _, err := os.Stat(filepath.Join(node, "var/lib/nodeconfd/txn/big")); !os.IsNotExist(err) {
		t.Errorf("transaction folder left after rollback: %v", err)
	}
	if _, err := os.Stat(filepath.Join(node, "var/lib/nodeconfd/orig/etc/big")); !os.IsNotExist(err) {
		t.Errorf("backup left after rollback: %v", err)
	}
}

// TestRemoveRestoresBigOriginal: removing a managed path restores a big
// original by streaming it back.
func TestRemoveRestoresBigOriginal(t *testing.T) {
	node, f := newNode(t)
	putBig(t, node, "etc/big", bigContents())
	before := sum(t, filepath.Join(node, "etc/big"))
	if err := f.WriteFile(plan.File{Path: "/etc/big", Contents: []byte("ours"), Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	var err error
	alloc := allocated(func() { err = f.RemoveFile("/etc/big") })
	if err != nil {
		t.Fatal(err)
	}
	if alloc > 1<<20 {
		t.Errorf("RemoveFile allocated %d KiB, want the original streamed back", alloc>>10)
	}
	if got := sum(t, filepath.Join(node, "etc/big")); got != before {
		t.Error("the original was not restored")
	}
}

// TestCheckDigest checks a node file against a digested file (the drift
// monitor's copy of a big file), and refuses to write one.
func TestCheckDigest(t *testing.T) {
	node, f := newNode(t)
	data := bigContents()
	putBig(t, node, "etc/big", data)
	file := plan.File{Path: "/etc/big", Contents: data, Mode: 0o644}
	digested := plan.Config{Files: map[string]plan.File{file.Path: file}}.Digested(0).Files[file.Path]
	if err := f.CheckFile(digested); err != nil {
		t.Errorf("CheckFile(same digest) = %v", err)
	}
	putBig(t, node, "etc/big", append(data[:len(data)-1:len(data)-1], 'x'))
	if err := f.CheckFile(digested); err == nil || !strings.Contains(err.Error(), "contents differ (33554432 bytes, want 33554432)") {
		t.Errorf("CheckFile(changed file) = %v, want contents differ", err)
	}
	if err := f.WriteFile(digested); err == nil {
		t.Error("WriteFile of a digest succeeded")
	}
}
