package hostfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestZZPhases(t *testing.T) {
	_, f := newNode(t)
	files := benchFiles()
	dir := filepath.Join(t.TempDir(), "etc/bench")
	os.MkdirAll(dir, 0o755)
	for i := range 4 {
		t0 := time.Now()
		tx, _ := f.BeginTxn(fmt.Sprint(i))
		t1 := time.Now()
		if err := tx.WriteFiles(files); err != nil {
			t.Fatal(err)
		}
		t2 := time.Now()
		tx.Commit()
		t3 := time.Now()
		for _, file := range files {
			p := filepath.Join(dir, filepath.Base(file.Path))
			fh, _ := os.OpenFile(p+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			fh.Write(file.Contents)
			fh.Sync()
			fh.Close()
			os.Rename(p+".tmp", p)
		}
		t4 := time.Now()
		t.Logf("iter %d: begin %v write %v commit %v | bare %v", i, t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3))
	}
}
