package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// parseArches reads -arch: a comma-separated list of GOARCH values, each once.
func parseArches(list string) ([]string, error) {
	var arches []string
	seen := map[string]bool{}
	for a := range strings.SplitSeq(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" || seen[a] {
			return nil, fmt.Errorf("-arch %q: want architectures separated by commas, each once", list)
		}
		seen[a] = true
		arches = append(arches, a)
	}
	return arches, nil
}

// newIndex builds one image per spec and joins them in an OCI image index,
// each manifest's descriptor naming its platform, so that a node pulls its
// own architecture's image by the one reference. The index carries the
// same annotations as its images (version, commit, time).
func newIndex(specs []spec) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, s := range specs {
		img, err := newImage(s)
		if err != nil {
			return nil, fmt.Errorf("building the %s image: %w", s.Arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: s.Arch}},
		})
	}
	return mutate.Annotations(idx, annotations(specs[0])).(v1.ImageIndex), nil
}

// buildIndex makes the multi-architecture image from specs and writes it,
// named ref, to the archive out. The result's sizes are the sum over the
// architectures; its digest is the index's, the one a pull by tag resolves.
func buildIndex(specs []spec, ref, out string) (v1.ImageIndex, result, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return nil, result{}, fmt.Errorf("parsing the image name %q: %w", ref, err)
	}
	idx, err := newIndex(specs)
	if err != nil {
		return nil, result{}, err
	}
	if err := writeIndexArchive(out, idx, tag, specs[0].Created); err != nil {
		return nil, result{}, err
	}
	res := result{Ref: tag.Name()}
	if res.Digest, err = idx.Digest(); err != nil {
		return nil, result{}, fmt.Errorf("reading the index's digest: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, result{}, fmt.Errorf("reading the index: %w", err)
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, result{}, fmt.Errorf("reading the %s image: %w", d.Platform.Architecture, err)
		}
		c, u, err := layerSizes(img)
		if err != nil {
			return nil, result{}, err
		}
		res.Compressed += c
		res.Uncompressed += u
	}
	return idx, res, nil
}

// push uploads the index and its images to ref's registry, with the
// credentials of the Docker config (docker login; none for an open
// registry). A registry on a private (RFC 1918) address or localhost is
// spoken to over plain HTTP, as go-containerregistry decides.
func push(ctx context.Context, idx v1.ImageIndex, ref string) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("parsing the image name %q: %w", ref, err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}
