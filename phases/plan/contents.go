package plan

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/url"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
)

// maxContentSize caps a decompressed file so that a small gzip bomb in a
// config cannot exhaust the daemon's memory.
const maxContentSize = 128 << 20

// resourceProblem is why a resource cannot be decoded: Sub is the field
// inside the resource ("source", "compression", "verification.hash").
type resourceProblem struct {
	Sub string
	Msg string
}

// decodeResource returns the bytes an inline resource holds: its data: URL
// decoded, decompressed and checked against its hash. A resource without a
// source holds no bytes. Any other URL scheme is refused: the daemon applies
// fully rendered configs and never fetches.
func decodeResource(r types.Resource) ([]byte, *resourceProblem) {
	if r.Source == nil || *r.Source == "" {
		return nil, nil
	}
	src := *r.Source
	u, err := url.Parse(src)
	if err != nil {
		return nil, &resourceProblem{"source", fmt.Sprintf("invalid URL: %v", err)}
	}
	if u.Scheme != "data" {
		scheme := u.Scheme
		if scheme == "" {
			scheme = "scheme-less"
		}
		return nil, &resourceProblem{"source", fmt.Sprintf(
			"%s URLs are not supported: the daemon does not fetch, contents must be inline data: URLs", scheme)}
	}
	du, err := dataurl.DecodeString(src)
	if err != nil {
		return nil, &resourceProblem{"source", fmt.Sprintf("invalid data URL: %v", err)}
	}
	data := du.Data
	compression := ""
	if r.Compression != nil {
		compression = *r.Compression
	}
	switch compression {
	case "":
	case "gzip":
		data, err = gunzip(data)
		if err != nil {
			return nil, &resourceProblem{"compression", fmt.Sprintf("decompressing gzip contents: %v", err)}
		}
	default:
		return nil, &resourceProblem{"compression", fmt.Sprintf("unsupported compression %q (want gzip or none)", compression)}
	}
	if r.Verification.Hash != nil {
		if msg := verifyHash(*r.Verification.Hash, data); msg != "" {
			return nil, &resourceProblem{"verification.hash", msg}
		}
	}
	return data, nil
}

// gunzip decompresses data, refusing results over maxContentSize.
func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxContentSize+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxContentSize {
		return nil, fmt.Errorf("contents larger than %d MiB", maxContentSize>>20)
	}
	return out, nil
}

// verifyHash checks data against an Ignition hash ("sha256-<hex>" or
// "sha512-<hex>", of the decompressed data) and returns what is wrong, if anything.
func verifyHash(spec string, data []byte) string {
	kind, want, ok := strings.Cut(spec, "-")
	if !ok {
		return fmt.Sprintf("hash %q is not of the form <type>-<hex>", spec)
	}
	var h hash.Hash
	switch kind {
	case "sha256":
		h = sha256.New()
	case "sha512":
		h = sha512.New()
	default:
		return fmt.Sprintf("unsupported hash type %q (want sha256 or sha512)", kind)
	}
	h.Write(data)
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, want) {
		return fmt.Sprintf("contents do not match: %s hash is %s, want %s", kind, got, want)
	}
	return ""
}
