package osfake

import (
	"encoding/json"
	"fmt"
	"strings"
)

// splitRef splits an ostree container reference into its transport and
// image name ("registry", "quay.io/os@sha256:...").
func splitRef(ref string) (transport, name string) {
	rest := ref
	for _, p := range containerRefPrefixes {
		if r, ok := strings.CutPrefix(ref, p); ok {
			rest = r
			if strings.HasPrefix(p, "ostree-remote-") {
				_, rest, _ = strings.Cut(rest, ":")
			}
			if strings.HasSuffix(p, "-registry:") {
				return "registry", rest
			}
			break
		}
	}
	if r, ok := strings.CutPrefix(rest, "docker://"); ok {
		return "registry", r
	}
	transport, name, _ = strings.Cut(rest, ":")
	return transport, name
}

func (f *fake) bootc(args []string) error {
	if len(args) == 0 {
		return exitError{2, "error: 'bootc' requires a subcommand but one was not provided\n\nUsage: bootc <COMMAND>"}
	}
	if err := f.load(); err != nil {
		return err
	}
	switch args[0] {
	case "status":
		return f.bootcStatus(args[1:])
	case "switch":
		return f.bootcSwitch(args[1:])
	case "rollback":
		return f.bootcRollback(args[1:])
	}
	return exitError{2, fmt.Sprintf("error: unrecognized subcommand '%s'\n\nUsage: bootc <COMMAND>", args[0])}
}

// bootcEntry is a deployment as bootc status shows a boot entry.
func (f *fake) bootcEntry(d Deployment) map[string]any {
	transport, name := splitRef(d.Image)
	img := map[string]any{"image": name, "transport": transport}
	if strings.HasPrefix(d.Image, "ostree-image-signed:") {
		img["signature"] = "containerPolicy"
	}
	return map[string]any{
		"image":        map[string]any{"image": img, "version": d.Version, "timestamp": nil, "imageDigest": digest(d.Image)},
		"cachedUpdate": nil, "incompatible": false, "pinned": false, "store": "ostreeContainer",
		"ostree": map[string]any{"checksum": d.Checksum, "deploySerial": d.Serial, "stateroot": f.state.OSName},
	}
}

func (f *fake) bootcStatus(args []string) error {
	fl, err := parseFlags(args, []string{"json", "booted"}, []string{"format", "format-version"}, nil)
	if err != nil {
		return exitError{2, "error: " + err.Error()}
	}
	// As bootc: an entry neither booted nor staged is the rollback one; when
	// it comes before the booted one the next boot brings it up (queued).
	var staged, booted, rollback any
	rollbackQueued := false
	for i, d := range f.state.Deployments {
		switch {
		case i == f.state.Booted:
			booted = f.bootcEntry(d)
		case d.Staged:
			staged = f.bootcEntry(d)
		case rollback == nil:
			rollback = f.bootcEntry(d)
			rollbackQueued = i < f.state.Booted
		}
	}
	next := f.state.Deployments[0]
	transport, name := splitRef(next.Image)
	host := map[string]any{
		"apiVersion": "org.containers.bootc/v1", "kind": "BootcHost", "metadata": map[string]any{"name": "host"},
		"spec":   map[string]any{"image": map[string]any{"image": name, "transport": transport}, "bootOrder": "default"},
		"status": map[string]any{"staged": staged, "booted": booted, "rollback": rollback, "rollbackQueued": rollbackQueued, "type": "bootcHost"},
	}
	if !fl.has("json") && fl.last("format") != "json" {
		fmt.Fprintf(f.stdout, "● Booted image: %s\n        Digest: %s\n", f.state.Deployments[f.state.Booted].Image, digest(f.state.Deployments[f.state.Booted].Image))
		return nil
	}
	out, _ := json.MarshalIndent(host, "", "  ")
	fmt.Fprintln(f.stdout, string(out))
	return nil
}

func (f *fake) bootcSwitch(args []string) error {
	fl, err := parseFlags(args, []string{"enforce-container-sigpolicy", "retain", "quiet", "apply", "mutate-in-place"},
		[]string{"transport"}, nil)
	if err != nil {
		return exitError{2, "error: " + err.Error()}
	}
	if fl.help {
		fmt.Fprintln(f.stdout, "Target a new container image reference to boot\n\nUsage: bootc switch [OPTIONS] <TARGET>")
		return nil
	}
	if fl.has("apply") || fl.has("mutate-in-place") {
		return fmt.Errorf("this fake does not implement switch --apply or --mutate-in-place")
	}
	if len(fl.positional) != 1 {
		return exitError{2, "error: the following required arguments were not provided:\n  <TARGET>\n\nUsage: bootc switch <TARGET>"}
	}
	name := fl.positional[0]
	transport := fl.last("transport")
	if transport == "" {
		transport = "registry"
	}
	var ref string
	switch {
	case fl.has("enforce-container-sigpolicy"):
		ref = "ostree-image-signed:" + transport + ":" + name
	case transport == "registry":
		ref = "ostree-unverified-registry:" + name
	default:
		ref = "ostree-unverified-image:" + transport + ":" + name
	}
	if f.state.Deployments[0].Image == ref {
		fmt.Fprintln(f.stdout, "Image specification is unchanged.")
		return nil
	}
	if f.pullFails() {
		return fmt.Errorf("Switching: Pulling: Creating importer: failed to invoke method OpenImage: failed to invoke method OpenImage: "+
			"pinging container registry %s: Get \"https://%s/v2/\": dial tcp: lookup %s: no such host",
			registryHost(name), registryHost(name), registryHost(name))
	}
	// A bootc image brings its own packages: no origin is carried over.
	d := f.newDeployment(Deployment{}, ref, f.state.Deployments[0].Kargs)
	f.stage(d)
	if err := f.save(); err != nil {
		return err
	}
	fmt.Fprintf(f.stdout, "Queued for next boot: %s\n  Version: %s\n  Digest: %s\n", name, d.Version, digest(ref))
	return nil
}
