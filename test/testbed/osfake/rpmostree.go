package osfake

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

func (f *fake) rpmOstree(args []string) error {
	if len(args) == 0 {
		return exitError{1, "Usage:\n  rpm-ostree [OPTION…] COMMAND\n\nerror: No command specified"}
	}
	if args[0] == "--version" {
		fmt.Fprintln(f.stdout, "rpm-ostree:\n Version: '2025.1'\n Git: nodeconfd-osfake\n Features:\n  - rust\n  - compose\n  - container")
		return nil
	}
	if err := f.load(); err != nil {
		return err
	}
	if title := transactionTitle(args); title != "" {
		if err := f.begin(title); err != nil {
			return err
		}
		defer f.end()
	}
	switch args[0] {
	case "cancel":
		return f.cancel(args[1:])
	case "status":
		return f.rpmStatus(args[1:])
	case "rebase":
		return f.rebase(args[1:])
	case "kargs":
		return f.kargs(args[1:])
	case "cleanup":
		return f.cleanup(args[1:])
	case "rollback":
		return f.rpmRollback(args[1:])
	case "update", "upgrade":
		return f.update(args[1:])
	case "override":
		return f.override(args[1:])
	}
	return fmt.Errorf("Unknown command '%s'", args[0])
}

func (f *fake) rpmStatus(args []string) error {
	fl, err := parseFlags(args, []string{"json", "booted", "verbose"}, nil, map[string]string{"b": "booted", "v": "verbose"})
	if err != nil {
		return err
	}
	var deps []map[string]any
	for i, d := range f.state.Deployments {
		if fl.has("booted") && i != f.state.Booted {
			continue
		}
		deps = append(deps, map[string]any{
			"id": f.id(d), "osname": f.state.OSName, "serial": d.Serial, "checksum": d.Checksum,
			"version": d.Version, "timestamp": d.Timestamp, "booted": i == f.state.Booted, "staged": d.Staged,
			"pinned": false, "unlocked": "none", "regenerate-initramfs": false,
			"container-image-reference": d.Image, "container-image-reference-digest": digest(d.Image),
			"requested-packages": orEmpty(d.Packages), "packages": orEmpty(d.Packages), "requested-local-packages": []string{},
			"requested-base-removals": orEmpty(d.Removals), "base-removals": baseRemovals(d), "base-local-replacements": []string{},
			"base-commit-meta": map[string]any{"ostree.bootable": true, "version": d.Version},
		})
	}
	if fl.has("json") {
		out, _ := json.MarshalIndent(map[string]any{"deployments": deps, "transaction": nil,
			"cached-update": nil, "update-driver": nil}, "", "  ")
		fmt.Fprintln(f.stdout, string(out))
		return nil
	}
	fmt.Fprintln(f.stdout, "State: idle\nDeployments:")
	for i, d := range f.state.Deployments {
		mark := " "
		if i == f.state.Booted {
			mark = "●"
		}
		fmt.Fprintf(f.stdout, "%s %s\n                   Digest: %s\n                  Version: %s\n", mark, d.Image, digest(d.Image), d.Version)
		if d.Staged {
			fmt.Fprintln(f.stdout, "                   Staged: yes")
		}
	}
	return nil
}

// containerRefPrefixes are the ostree container references rebase takes.
var containerRefPrefixes = []string{"ostree-unverified-registry:", "ostree-unverified-image:",
	"ostree-remote-registry:", "ostree-remote-image:", "ostree-image-signed:"}

func (f *fake) rebase(args []string) error {
	fl, err := parseFlags(args, []string{"experimental", "bypass-driver", "reboot", "lock-finalization"}, []string{"os"},
		map[string]string{"r": "reboot"})
	if err != nil {
		return err
	}
	if fl.help {
		fmt.Fprintln(f.stdout, "Usage:\n  rpm-ostree rebase [OPTION…] REFSPEC [REVISION] - Switch to a different tree")
		return nil
	}
	if fl.has("reboot") {
		return fmt.Errorf("this fake does not implement rebase --reboot")
	}
	if len(fl.positional) != 1 {
		return exitError{1, "error: Too few arguments; usage: rpm-ostree rebase REFSPEC [REVISION]"}
	}
	ref := fl.positional[0]
	container := false
	for _, p := range containerRefPrefixes {
		container = container || strings.HasPrefix(ref, p)
	}
	if !container {
		return fmt.Errorf("Refspec '%s' is not an ostree container image reference (this fake pulls only those)", ref)
	}
	_, name := splitRef(ref)
	if f.state.Deployments[0].Image == ref {
		fmt.Fprintln(f.stdout, "Pulling manifest: "+ref+"\nNo changes.")
		return nil
	}
	fmt.Fprintln(f.stdout, "Pulling manifest: "+ref)
	if f.pullFails() {
		return fmt.Errorf("Creating importer: failed to invoke method OpenImage: failed to invoke method OpenImage: "+
			"pinging container registry %s: Get \"https://%s/v2/\": dial tcp: lookup %s: no such host",
			registryHost(name), registryHost(name), registryHost(name))
	}
	d := f.newDeployment(f.state.Deployments[0], ref, f.state.Deployments[0].Kargs)
	fmt.Fprintf(f.stdout, "Importing: %s (digest: %s)\nStaging deployment... done\n", ref, digest(ref))
	f.stage(d)
	if err := f.save(); err != nil {
		return err
	}
	fmt.Fprintln(f.stdout, "Run \"systemctl reboot\" to start a reboot")
	return nil
}

func (f *fake) kargs(args []string) error {
	fl, err := parseFlags(args, []string{"reboot", "unchanged-exit-77", "import-proc-cmdline", "editor", "lock-finalization"},
		[]string{"append", "delete", "append-if-missing", "delete-if-present", "replace", "deploy-index", "os"}, nil)
	if err != nil {
		return err
	}
	for _, unsupported := range []string{"reboot", "import-proc-cmdline", "editor", "replace"} {
		if fl.has(unsupported) {
			return fmt.Errorf("this fake does not implement kargs --%s", unsupported)
		}
	}
	if len(fl.positional) > 0 {
		return fmt.Errorf("Unknown argument %s", fl.positional[0])
	}
	index := 0
	if fl.has("deploy-index") {
		index, err = strconv.Atoi(fl.last("deploy-index"))
		if err != nil || index < 0 || index >= len(f.state.Deployments) {
			return fmt.Errorf("Out of range deployment index %s, expected < %d", fl.last("deploy-index"), len(f.state.Deployments))
		}
	}
	base := f.state.Deployments[index]
	edits := 0
	for _, o := range []string{"append", "delete", "append-if-missing", "delete-if-present"} {
		edits += len(fl.values[o])
	}
	if edits == 0 {
		fmt.Fprintln(f.stdout, strings.Join(f.bootKargs(base), " "))
		return nil
	}
	kargs := append([]string{}, base.Kargs...)
	for _, a := range fl.values["delete"] {
		i, err := findKarg(kargs, a)
		if err != nil {
			return err
		}
		kargs = append(kargs[:i], kargs[i+1:]...)
	}
	for _, a := range fl.values["delete-if-present"] {
		// As ostree: a present key is deleted as --delete would, errors included.
		if !hasKey(kargs, a) {
			continue
		}
		i, err := findKarg(kargs, a)
		if err != nil {
			return err
		}
		kargs = append(kargs[:i], kargs[i+1:]...)
	}
	kargs = append(kargs, fl.values["append"]...)
	for _, a := range fl.values["append-if-missing"] {
		k, _, _ := strings.Cut(a, "=")
		if _, err := findKarg(kargs, k); err != nil {
			kargs = append(kargs, a)
		}
	}
	if strings.Join(kargs, " ") == strings.Join(base.Kargs, " ") {
		if fl.has("unchanged-exit-77") {
			return exitError{77, ""}
		}
		fmt.Fprintln(f.stdout, "Kernel arguments unchanged.")
		return nil
	}
	fmt.Fprintln(f.stdout, "Staging deployment... done")
	if base.Staged {
		f.state.Deployments[index].Kargs = kargs
	} else {
		f.stage(f.newDeployment(base, base.Image, kargs))
	}
	if err := f.save(); err != nil {
		return err
	}
	fmt.Fprintln(f.stdout, "Kernel arguments updated.\nRun \"systemctl reboot\" to start a reboot")
	return nil
}

// bootKargs are d's kernel arguments as its boot entry has them: a
// finalized deployment's entry also names the deployment with ostree=.
func (f *fake) bootKargs(d Deployment) []string {
	if d.Staged {
		return d.Kargs
	}
	return append(append([]string{}, d.Kargs...), fmt.Sprintf("ostree=/ostree/boot.1/%s/%s/%d", f.state.OSName, d.Checksum, d.Serial))
}

// hasKey reports whether kargs has an argument with a's key.
func hasKey(kargs []string, a string) bool {
	key, _, _ := strings.Cut(a, "=")
	for _, k := range kargs {
		if kk, _, _ := strings.Cut(k, "="); kk == key {
			return true
		}
	}
	return false
}

// findKarg finds the argument a (key=value, or a key with one value) as
// ostree's kernel argument deletion does.
func findKarg(kargs []string, a string) (int, error) {
	for i, k := range kargs {
		if k == a {
			return i, nil
		}
	}
	key, val, hasVal := strings.Cut(a, "=")
	var found []int
	for i, k := range kargs {
		if kk, _, _ := strings.Cut(k, "="); kk == key {
			found = append(found, i)
		}
	}
	switch {
	case len(found) == 0:
		return -1, fmt.Errorf("No key '%s' found", key)
	case hasVal:
		return -1, fmt.Errorf("No karg '%s=%s' found", key, val)
	case len(found) > 1:
		return -1, fmt.Errorf("Multiple values for key '%s' found", key)
	}
	return found[0], nil
}

func (f *fake) cleanup(args []string) error {
	fl, err := parseFlags(args, []string{"rollback", "pending", "base", "repomd"}, []string{"os"},
		map[string]string{"r": "rollback", "p": "pending", "b": "base", "m": "repomd"})
	if err != nil {
		return err
	}
	if !fl.has("rollback") && !fl.has("pending") && !fl.has("base") && !fl.has("repomd") {
		return fmt.Errorf("At least one cleanup option must be specified")
	}
	before := len(f.state.Deployments)
	booted := f.state.Deployments[f.state.Booted]
	var keep []Deployment
	for i, d := range f.state.Deployments {
		if (i < f.state.Booted && fl.has("pending")) || (i > f.state.Booted && fl.has("rollback")) {
			continue
		}
		keep = append(keep, d)
	}
	f.state.Deployments = keep
	for i, d := range keep {
		if d.Checksum == booted.Checksum && d.Serial == booted.Serial {
			f.state.Booted = i
		}
	}
	if len(keep) == before {
		fmt.Fprintln(f.stdout, "Deployments unchanged.")
		return nil
	}
	if err := f.save(); err != nil {
		return err
	}
	fmt.Fprintf(f.stdout, "Deployments removed: %d\n", before-len(keep))
	return nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
