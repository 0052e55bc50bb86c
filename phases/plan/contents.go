package plan

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
)

// resourceProblem is why a resource cannot be decoded: Sub is the field
// inside the resource ("source", "compression", "verification.hash").
type resourceProblem struct {
	Sub string
	Msg string
}

// fileContents decodes a file's contents and appends into one buffer of
// exactly their size, within the file and config caps. Each resource is
// decoded twice, as a stream: once to measure it (stopping one byte past
// what is left of the caps) and check its hash, then into the buffer. So a
// gzip bomb costs the caps' worth of CPU and no memory, and no decoded
// copy is made. ok is false when a problem was added.
func (p *parser) fileContents(field string, f types.File) (contents []byte, ok bool) {
	resources := append([]types.Resource{f.Contents}, f.Append...)
	sizes := make([]int64, len(resources))
	fileLeft := p.size.limits.MaxFileSize
	var total int64
	for i, r := range resources {
		rfield := field + ".contents"
		if i > 0 {
			rfield = fmt.Sprintf("%s.append[%d]", field, i-1)
		}
		limit := min(fileLeft, p.size.left())
		n, prob := measureResource(r, limit)
		if prob != nil {
			p.add(rfield+"."+prob.Sub, "%s", prob.Msg)
			return nil, false
		}
		if n > limit {
			if fileLeft <= p.size.left() {
				p.add(rfield, "contents larger than the file size cap of %s (--max-file-size)", sizeString(p.size.limits.MaxFileSize))
			} else {
				p.add("spec.config.storage.files", "%s", p.totalMsg())
			}
			return nil, false
		}
		sizes[i] = n
		fileLeft -= n
		p.size.used += n
		total += n
	}
	if f.Contents.Source == nil && len(f.Append) == 0 {
		return nil, true
	}
	contents = make([]byte, total)
	off := int64(0)
	for i, r := range resources {
		if err := readResource(r, contents[off:off+sizes[i]]); err != nil {
			// The first pass read the same bytes: only a bug gets here.
			p.add(field+".contents", "decoding contents: %v", err)
			return nil, false
		}
		off += sizes[i]
	}
	return contents, true
}

// measureResource decodes r as a stream, counting its bytes up to limit+1,
// and checks its hash when it decoded whole.
func measureResource(r types.Resource, limit int64) (int64, *resourceProblem) {
	rd, prob := openResource(r)
	if prob != nil || rd == nil {
		return 0, prob
	}
	var h hash.Hash
	var kind, want string
	if r.Verification.Hash != nil {
		var msg string
		if h, kind, want, msg = hasher(*r.Verification.Hash); msg != "" {
			return 0, &resourceProblem{"verification.hash", msg}
		}
	}
	n, err := measureStream(rd, limit, h)
	if err != nil {
		return 0, readProblem(r, err)
	}
	if n > limit || h == nil {
		return n, nil
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, want) {
		return 0, &resourceProblem{"verification.hash", fmt.Sprintf("contents do not match: %s hash is %s, want %s", kind, got, want)}
	}
	return n, nil
}

// measureStream reads rd up to limit+1 bytes into h (when not nil) and
// returns how many it read: more than limit means over the cap.
func measureStream(rd io.Reader, limit int64, h hash.Hash) (int64, error) {
	w := io.Discard
	if h != nil {
		w = h
	}
	return io.Copy(w, io.LimitReader(rd, limit+1))
}

// readResource decodes r into buf, which must be exactly its size.
func readResource(r types.Resource, buf []byte) error {
	rd, prob := openResource(r)
	if prob != nil {
		return errors.New(prob.Msg)
	}
	if rd == nil {
		if len(buf) != 0 {
			return fmt.Errorf("no source, want %d bytes", len(buf))
		}
		return nil
	}
	if _, err := io.ReadFull(rd, buf); err != nil {
		return err
	}
	if n, _ := rd.Read(make([]byte, 1)); n != 0 {
		return errors.New("contents longer than measured")
	}
	return nil
}

// sourceError marks a read error of the data URL itself (bad base64), as
// opposed to one of the decompressor.
type sourceError struct{ err error }

func (e sourceError) Error() string { return e.err.Error() }

type sourceReader struct{ r io.Reader }

func (s sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = sourceError{err}
	}
	return n, err
}

func readProblem(r types.Resource, err error) *resourceProblem {
	var se sourceError
	if errors.As(err, &se) || r.Compression == nil || *r.Compression == "" {
		return &resourceProblem{"source", fmt.Sprintf("invalid data URL: %v", err)}
	}
	return &resourceProblem{"compression", fmt.Sprintf("decompressing gzip contents: %v", err)}
}

// openResource returns a stream of the bytes an inline resource holds: its
// data: URL decoded and decompressed. A resource without a source holds no
// bytes (nil reader). Any other URL scheme is refused: the daemon applies
// fully rendered configs and never fetches.
func openResource(r types.Resource) (io.Reader, *resourceProblem) {
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
	rd, err := dataReader(src)
	if err != nil {
		return nil, &resourceProblem{"source", fmt.Sprintf("invalid data URL: %v", err)}
	}
	compression := ""
	if r.Compression != nil {
		compression = *r.Compression
	}
	switch compression {
	case "":
		return rd, nil
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, readProblem(r, err)
		}
		return zr, nil
	}
	return nil, &resourceProblem{"compression", fmt.Sprintf("unsupported compression %q (want gzip or none)", compression)}
}

// dataReader streams the data of a data: URL. Base64 data, the bulk of
// real configs, is decoded as a stream; other (percent-encoded) data, whose
// decoding only shrinks it, and headers with quoted parameters go through
// the dataurl package, which Ignition's validation also uses.
func dataReader(src string) (io.Reader, error) {
	header, data, ok := strings.Cut(strings.TrimPrefix(src, "data:"), ",")
	if ok && strings.HasSuffix(header, ";base64") && !strings.Contains(header, `"`) {
		return sourceReader{base64.NewDecoder(base64.StdEncoding, strings.NewReader(data))}, nil
	}
	du, err := dataurl.DecodeString(src)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(du.Data), nil
}

// hasher returns the hash an Ignition hash spec ("sha256-<hex>" or
// "sha512-<hex>", of the decompressed data) asks for, or what is wrong
// with the spec.
func hasher(spec string) (h hash.Hash, kind, want, msg string) {
	kind, want, ok := strings.Cut(spec, "-")
	if !ok {
		return nil, "", "", fmt.Sprintf("hash %q is not of the form <type>-<hex>", spec)
	}
	switch kind {
	case "sha256":
		return sha256.New(), kind, want, ""
	case "sha512":
		return sha512.New(), kind, want, ""
	}
	return nil, "", "", fmt.Sprintf("unsupported hash type %q (want sha256 or sha512)", kind)
}
