package osupdate

import (
	"fmt"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// RebaseArgs is the rpm-ostree command line that stages image. "--" ends
// the options (rpm-ostree parses them with GLib's GOption, which takes it
// so), so no reference can be read as one.
func RebaseArgs(image string) ([]string, error) {
	r, err := plan.ParseImage(image)
	if err != nil {
		return nil, err
	}
	return []string{"rebase", "--experimental", "--", r.String()}, nil
}

// KargsArgs is the one rpm-ostree command line that removes and adds kernel
// arguments, in order, duplicates kept; nil when there is nothing to do.
// Each argument is the value of an --opt=value option, never a positional
// argument, so it needs no "--".
func KargsArgs(removed, added []string) []string {
	if len(removed)+len(added) == 0 {
		return nil
	}
	args := []string{"kargs"}
	for _, k := range removed {
		args = append(args, "--delete-if-present="+k)
	}
	for _, k := range added {
		args = append(args, "--append="+k)
	}
	return args
}

// SwitchArgs is the bootc command line that stages image. bootc verifies
// signatures through the containers policy only, so ostree remote
// verification is refused. "--" ends the options (bootc's clap parser
// takes it so), so no image name can be read as one.
func SwitchArgs(image string) ([]string, error) {
	r, err := plan.ParseImage(image)
	if err != nil {
		return nil, err
	}
	args := []string{"switch"}
	switch r.Verify {
	case "remote":
		return nil, fmt.Errorf("image reference %q: bootc cannot verify images with an ostree remote (%s); use a registry image", image, r.Remote)
	case "signed":
		args = append(args, "--enforce-container-sigpolicy")
	}
	if r.Transport != "registry" {
		args = append(args, "--transport", r.Transport)
	}
	return append(args, "--", r.Name), nil
}

// DescribeKargs sums up a kernel argument change: "+a +b -c".
func DescribeKargs(removed, added []string) string {
	var parts []string
	for _, k := range added {
		parts = append(parts, "+"+k)
	}
	for _, k := range removed {
		parts = append(parts, "-"+k)
	}
	return strings.Join(parts, " ")
}
