package osfake

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// Package layering, as rpm-ostree does it for what the daemon uses: `update
// --install/--uninstall` layers packages from the repositories, `override
// remove` takes base packages out (with --install for their replacement),
// `override reset` puts them back (with --uninstall). Every change makes a
// new staged deployment from the one that boots next, or edits the staged
// one, whose origin (requested packages and base removals) rebase and
// kargs carry on; the errors are rpm-ostree's own.

// UnavailablePackagesFile, when present, lists (one a line) packages the
// node's repositories lack: installing one fails as rpm-ostree does.
const UnavailablePackagesFile = Dir + "/unavailable-packages"

// basePackages are the packages of the fake's OS image.
func basePackages() []string {
	return []string{"bash", "systemd", "rpm-ostree", "kernel", "kernel-core", "kernel-modules",
		"kernel-modules-core", "kernel-modules-extra"}
}

// packageEdit is one change of a deployment's origin.
type packageEdit struct {
	install, uninstall, remove, reset []string
}

func (f *fake) update(args []string) error {
	fl, err := parseFlags(args, []string{"reboot", "bypass-driver", "lock-finalization", "cache-only", "download-only", "allow-downgrade"},
		[]string{"install", "uninstall", "os"}, map[string]string{"r": "reboot", "C": "cache-only"})
	if err != nil {
		return err
	}
	if fl.has("reboot") {
		return fmt.Errorf("this fake does not implement update --reboot")
	}
	if len(fl.positional) > 0 {
		return fmt.Errorf("Too many arguments passed")
	}
	if !fl.has("install") && !fl.has("uninstall") {
		// The fake's images are pinned by digest: nothing newer to pull.
		fmt.Fprintln(f.stdout, "Pulling manifest: "+f.state.Deployments[0].Image+"\nNo upgrade available.")
		return nil
	}
	return f.editPackages(packageEdit{install: fl.values["install"], uninstall: fl.values["uninstall"]})
}

func (f *fake) override(args []string) error {
	if len(args) == 0 {
		return exitError{1, "Usage:\n  rpm-ostree override [OPTION…] COMMAND\n\nerror: No command specified"}
	}
	fl, err := parseFlags(args[1:], []string{"reboot", "dry-run", "lock-finalization", "cache-only", "all"},
		[]string{"install", "uninstall", "os", "stateroot", "replace"}, map[string]string{"r": "reboot", "n": "dry-run", "a": "all"})
	if err != nil {
		return err
	}
	for _, unsupported := range []string{"reboot", "dry-run", "all", "replace"} {
		if fl.has(unsupported) {
			return fmt.Errorf("this fake does not implement override --%s", unsupported)
		}
	}
	e := packageEdit{install: fl.values["install"], uninstall: fl.values["uninstall"]}
	switch args[0] {
	case "remove":
		e.remove = fl.positional
	case "reset":
		e.reset = fl.positional
	default:
		return fmt.Errorf("Unknown \"override\" subcommand \"%s\"", args[0])
	}
	if len(fl.positional) == 0 {
		return exitError{1, "error: At least one PACKAGE must be specified"}
	}
	return f.editPackages(e)
}

// editPackages applies e to the origin of the deployment that boots next
// and stages the result.
func (f *fake) editPackages(e packageEdit) error {
	base := f.state.Deployments[0]
	pkgs, removals := slices.Clone(base.Packages), slices.Clone(base.Removals)
	for _, p := range e.reset {
		i := slices.Index(removals, p)
		if i < 0 {
			return fmt.Errorf("No overrides for package '%s'", p)
		}
		removals = slices.Delete(removals, i, i+1)
	}
	for _, p := range e.remove {
		if slices.Contains(removals, p) {
			return fmt.Errorf("Override already exists for package '%s'", p)
		}
		if !slices.Contains(basePackages(), p) {
			return fmt.Errorf("Package \"%s\" not found", p)
		}
		removals = append(removals, p)
	}
	for _, p := range e.uninstall {
		i := slices.Index(pkgs, p)
		if i < 0 {
			return fmt.Errorf("Package/capability '%s' is not currently requested", p)
		}
		pkgs = slices.Delete(pkgs, i, i+1)
	}
	for _, p := range e.install {
		if slices.Contains(pkgs, p) {
			return fmt.Errorf("Package/capability '%s' is already requested", p)
		}
		pkgs = append(pkgs, p)
	}
	if missing, err := f.unavailable(e.install); err != nil || len(missing) > 0 {
		if err != nil {
			return err
		}
		return fmt.Errorf("Packages not found: %s", strings.Join(missing, ", "))
	}
	fmt.Fprintln(f.stdout, "Checking out tree "+base.Checksum[:7]+"... done\nResolving dependencies... done\nStaging deployment... done")
	if base.Staged {
		f.state.Deployments[0].Packages, f.state.Deployments[0].Removals = pkgs, removals
	} else {
		d := f.newDeployment(base, base.Image, base.Kargs)
		d.Packages, d.Removals = pkgs, removals
		f.stage(d)
	}
	if err := f.save(); err != nil {
		return err
	}
	fmt.Fprintln(f.stdout, "Run \"systemctl reboot\" to start a reboot")
	return nil
}

// unavailable lists the packages of pkgs the repositories lack.
func (f *fake) unavailable(pkgs []string) ([]string, error) {
	data, err := os.ReadFile(f.path(UnavailablePackagesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lacking := strings.Fields(string(data))
	var out []string
	for _, p := range pkgs {
		if slices.Contains(lacking, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// baseRemovals is a deployment's base-removals as `rpm-ostree status
// --json` shows them: one (nevra, name, epoch, version, release, arch)
// tuple per removed package.
func baseRemovals(d Deployment) [][]any {
	out := [][]any{}
	for _, p := range d.Removals {
		out = append(out, []any{p + "-6.12.0-1.fc42.x86_64", p, 0, "6.12.0", "1.fc42", "x86_64"})
	}
	return out
}
