package plan

import (
	"crypto/sha256"
	"testing"
)

func TestDigested(t *testing.T) {
	big := make([]byte, 100)
	cfg := Config{Files: map[string]File{
		"/etc/small": {Path: "/etc/small", Contents: []byte("tiny")},
		"/etc/big":   {Path: "/etc/big", Contents: big, Mode: 0o600},
	}}
	d := cfg.Digested(10)
	if f := d.Files["/etc/small"]; string(f.Contents) != "tiny" || f.Digest != nil {
		t.Errorf("small file = %+v, want it kept whole", f)
	}
	f := d.Files["/etc/big"]
	if f.Contents != nil || f.Digest == nil || f.Digest.Size != 100 || f.Digest.SHA256 != sha256.Sum256(big) || f.Mode != 0o600 {
		t.Errorf("big file = %+v, want a digest of its 100 bytes", f)
	}
	if cfg.Files["/etc/big"].Contents == nil {
		t.Error("Digested changed the original config")
	}
}
