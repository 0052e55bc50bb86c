package hostfs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestZZAlternate(t *testing.T) {
	_, f := newNode(t)
	files := benchFiles("/etc/bench")
	dir := filepath.Join(t.TempDir(), "etc/bench")
	os.MkdirAll(dir, 0o755)
	bare := benchFiles(dir)
	b := &testing.B{}
	_ = b
	bareRun := func() time.Duration {
		t0 := time.Now()
		for _, file := range bare {
			fh, _ := os.OpenFile(file.Path+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			fh.Write(file.Contents)
			fh.Sync()
			fh.Close()
			os.Rename(file.Path+".tmp", file.Path)
		}
		return time.Since(t0)
	}
	txRun := func(id string, loop bool) time.Duration {
		t0 := time.Now()
		tx, _ := f.BeginTxn(id)
		if loop {
			for _, file := range files {
				tx.WriteFile(file)
			}
		} else {
			tx.WriteFiles(files)
		}
		tx.Commit()
		return time.Since(t0)
	}
	txRun("warm", false)
	bareRun()
	var rb, rl []float64
	for i := range 8 {
		var a, c, l time.Duration
		if i%2 == 0 {
			a = bareRun()
			c = txRun(fmt.Sprint(i), false)
			l = txRun(fmt.Sprint("l", i), true)
		} else {
			l = txRun(fmt.Sprint("l", i), true)
			c = txRun(fmt.Sprint(i), false)
			a = bareRun()
		}
		rb = append(rb, float64(c)/float64(a))
		rl = append(rl, float64(l)/float64(a))
		t.Logf("bare %v batch %v loop %v", a, c, l)
	}
	slices.Sort(rb)
	slices.Sort(rl)
	t.Logf("median ratio batch/bare %.2f loop/bare %.2f", (rb[3]+rb[4])/2, (rl[3]+rl[4])/2)
}
