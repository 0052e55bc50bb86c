package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one subcommand of nodeconfd.
type command struct {
	name, args, summary string
	run                 func(args []string) error
}

// commands lists every subcommand; `nodeconfd --help` shows them in order.
func commands() []command {
	return []command{
		{"start", "[--once-from FILE [--skip-reboot]] [flags]", "run the daemon on this node, or apply one config " +
			"file with no API server (see nodeconfd start --help)", start},
		{"plan", "--current A.yaml --desired B.yaml | --node NAME [--desired NAME] [flags]",
			"preview what an update would do, touching nothing (see nodeconfd plan --help)", func(args []string) error {
				if code := runPlan(args, os.Stdout, os.Stderr); code != 0 {
					os.Exit(code)
				}
				return nil
			}},
		{"render", "[--pool worker] [-o yaml|json] [flags] FILE...",
			"merge a pool's MachineConfigs from files into its rendered config, as the controller does (see nodeconfd render --help)",
			func(args []string) error {
				if code := runRender(args, os.Stdout, os.Stderr); code != 0 {
					os.Exit(code)
				}
				return nil
			}},
		{"controller", "[flags]", "render each MachineConfigPool's config and roll it out to the pool's nodes, " +
			"as the elected leader of the controller's replicas (see nodeconfd controller --help)", runController},
		{"prune", "[--kubeconfig FILE] [--keep N] [--confirm]",
			"list the rendered MachineConfigs nothing uses past the newest N of each pool, and why the others are kept; " +
				"delete them with --confirm (see nodeconfd prune --help)", runPrunes},
		{"version", "", "print the release this binary was built from", func([]string) error {
			fmt.Println(version)
			return nil
		}},
	}
}

// writeUsage writes the top-level help: what nodeconfd is and its commands.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "nodeconfd: the node configuration daemon. It steps its node to the rendered MachineConfig\n"+
		"the node's desiredConfig annotation names, and reports every phase in the node's MachineConfigNode.\n\n"+
		"Usage:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %s\n      %s\n", strings.TrimSpace("nodeconfd "+c.name+" "+c.args), c.summary)
	}
	fmt.Fprint(w, "\nRun \"nodeconfd <command> --help\" for a command's flags.\n\nReference (in the source tree):\n")
	for _, d := range referencePages {
		fmt.Fprintf(w, "  %-24s %s\n", d.path, d.what)
	}
}

// referencePages are the docs/ pages the usage points to; the README links
// the same ones.
var referencePages = []struct{ path, what string }{
	{"docs/operations.md", "flags, refusals, pause, windows, blocking pods, alerts, reboots, surge, plan, once-from, prune"},
	{"docs/status.md", "the MachineConfigNode status: conditions, reasons, Events, annotations"},
	{"docs/controller.md", "pools, rendering, rollout order and budget"},
	{"docs/metrics.md", "metrics and alerting rules"},
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// flagGroup is a titled group of start's flags in its help.
type flagGroup struct {
	title string
	flags []string
}

// startFlagGroups groups start's flags for its help. Every flag must be in
// one group (TestStartHelpGroupsEveryFlag); a flag left out is shown under
// "Other" all the same.
func startFlagGroups() []flagGroup {
	return []flagGroup{
		{"Cluster", []string{"kubeconfig", "namespace"}},
		{"Node", []string{"node-name", "pool", "root-mount", "system-bus-address", "release-memory-when-idle",
			"start-jitter"}},
		{"Updates", []string{"allowed-config-pattern", "verify-rendered-configs", "base-os-image-url", "base-os-extensions-image", "node-disruption-policy", "post-action-policy", "max-file-size", "max-config-size",
			"max-files", "max-units", "max-path-depth",
			"retry-initial", "retry-max", "update-spread", "image-mode-status", "node-lifecycle-conditions"}},
		{"Health gate", []string{"health-timeout", "health-units", "health-command", "health-command-timeout"}},
		{"Reboot on request", []string{"reboot-sentinel", "reboot-check-command", "reboot-check-interval"}},
		{"Once, without an API server", []string{"once-from", "skip-reboot"}},
		{"Maintenance windows, blocking pods and alerts", []string{"maintenance-window", "maintenance-windows-configmap",
			"maintenance-windows-all-updates", "blocking-pod-selector", "prometheus-url", "alert-name-regexp",
			"alert-ignore-regexp", "alert-label-selector", "alerts-unreachable"}},
		{"Drain", []string{"drain-timeout", "drain-timeout-action", "evict-unowned-pods", "drain-last-selector", "drain-surge-max", "drain-forecast-wait", "volume-detach-timeout"}},
		{"OS", []string{"os-pull-attempts", "os-pull-retry-initial", "os-pull-retry-max", "os-command-timeout"}},
		{"Notifications", []string{"notify-url", "notify-url-file", "notify-template"}},
		{"Logging and metrics", []string{"log-format", "debug", "metrics-address", "metrics-auth",
			"metrics-tls-cert-file", "metrics-tls-key-file"}},
	}
}

// startFlagError handles a failed parse of start's flags: --help prints
// the help on stdout (main then exits 0); an error points to it.
func startFlagError(fs *flag.FlagSet, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		writeStartUsage(os.Stdout, fs)
		return err
	}
	return fmt.Errorf("%w (run \"nodeconfd start --help\" for the flags)", err)
}

// writeStartUsage writes start's help: its flags by group.
func writeStartUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "Usage: nodeconfd start [flags]\n\nRuns the daemon on this node until SIGTERM.\n")
	shown := map[string]bool{}
	for _, g := range startFlagGroups() {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.flags {
			if f := fs.Lookup(name); f != nil {
				writeFlag(w, f)
				shown[name] = true
			}
		}
	}
	other := false
	fs.VisitAll(func(f *flag.Flag) {
		if shown[f.Name] || isRemoved(f) {
			return
		}
		if !other {
			fmt.Fprint(w, "\nOther:\n")
			other = true
		}
		writeFlag(w, f)
	})
}

// writeFlag writes one flag as flag.PrintDefaults does, with -- and the
// usage wrapped.
func writeFlag(w io.Writer, f *flag.Flag) {
	typ, usage := flag.UnquoteUsage(f)
	fmt.Fprintf(w, "  --%s", f.Name)
	if typ != "" {
		fmt.Fprintf(w, " %s", typ)
	}
	switch {
	case strings.Contains(usage, "(default"): // the usage says it better
	case f.DefValue == "" || f.DefValue == "0" || f.DefValue == "false" || f.DefValue == "0s":
	case typ == "string":
		usage += fmt.Sprintf(" (default %q)", f.DefValue)
	default:
		usage += fmt.Sprintf(" (default %s)", f.DefValue)
	}
	fmt.Fprintln(w)
	for _, line := range wrap(usage, 84) {
		fmt.Fprintf(w, "      %s\n", line)
	}
}

// wrap breaks s into lines of at most width columns, between words.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}
