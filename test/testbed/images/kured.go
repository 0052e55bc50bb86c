package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
)

// KuredEntrypoint is where the kured image (Kured) has kured's binary.
const KuredEntrypoint = "/kured"

// Kured pushes, as ref, an image of kured's binary bin (hack/build-kured.sh)
// for test/bench/kured. kured's own image is Alpine with kured in it, and
// kured runs its reboot command through /usr/bin/nsenter (into PID 1's
// mount namespace); the bed pulls nothing from outside, so this image has
// no /usr of its own: it has the binary at KuredEntrypoint and Debian's
// merged-/usr links (bin, lib, lib64 into usr), so that the pod, given the
// node's /usr read-only as its /usr (a hostPath), runs the node's nsenter
// with the node's libraries. That /usr is all kured takes from the node
// that Alpine's image would have given it.
func Kured(ctx context.Context, bin, ref string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("reading %s: %w", bin, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []*tar.Header{
		{Name: "usr/", Mode: 0o755, Typeflag: tar.TypeDir},
		{Name: "bin", Linkname: "usr/bin", Typeflag: tar.TypeSymlink},
		{Name: "lib", Linkname: "usr/lib", Typeflag: tar.TypeSymlink},
		{Name: "lib64", Linkname: "usr/lib64", Typeflag: tar.TypeSymlink},
		{Name: "sbin", Linkname: "usr/sbin", Typeflag: tar.TypeSymlink},
		{Name: "tmp/", Mode: 0o1777, Typeflag: tar.TypeDir},
		{Name: KuredEntrypoint[1:], Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg},
	}
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return push(ctx, buf.Bytes(), KuredEntrypoint, ref)
}
