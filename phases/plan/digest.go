package plan

import (
	"crypto/sha256"
	"maps"
)

// Digest stands for a file's contents by their size and SHA-256.
type Digest struct {
	Size   int64
	SHA256 [sha256.Size]byte
}

// Digested returns a copy of c to check the node against, not to apply:
// each file of more than min bytes has its Contents replaced by a Digest.
// The drift monitor keeps the config the node runs for as long as the node
// idles, so it keeps such a copy (a few bytes per big file) rather than up
// to the config size cap of decoded contents. Never Compare or write a
// digested config.
func (c Config) Digested(min int) Config {
	files := maps.Clone(c.Files)
	for p, f := range files {
		if len(f.Contents) > min {
			f.Digest = &Digest{Size: int64(len(f.Contents)), SHA256: sha256.Sum256(f.Contents)}
			f.Contents = nil
			files[p] = f
		}
	}
	c.Files = files
	return c
}
