package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/nodeconfd/nodeconfd/phases"
)

// healthOptions are the post-update health gate's flags.
type healthOptions struct {
	units, command string
	timeout        time.Duration
	commandTimeout time.Duration
}

// DefaultHealthTimeout bounds the health gate.
const DefaultHealthTimeout = 10 * time.Minute

func (h *healthOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&h.units, "health-units", "",
		"comma-separated systemd units that must be active and not restarting after an update (the health gate), "+
			"else the node is rolled back to its previous config")
	fs.StringVar(&h.command, "health-command", "",
		"a check command run after an update in the host root (chrooted, no shell: words separated by spaces; "+
			"write `sh -c ...` or a script for more); it must exit 0, else the node is rolled back")
	fs.DurationVar(&h.timeout, "health-timeout", DefaultHealthTimeout,
		"how long the node has to become healthy after an update (Node Ready after a reboot, --health-units, "+
			"--health-command) before it is rolled back to its previous config")
	fs.DurationVar(&h.commandTimeout, "health-command-timeout", time.Minute, "how long one run of --health-command may take")
}

func (h *healthOptions) check() error {
	if h.timeout <= 0 {
		return fmt.Errorf("--health-timeout %s: must be positive", h.timeout)
	}
	if h.commandTimeout <= 0 {
		return fmt.Errorf("--health-command-timeout %s: must be positive", h.commandTimeout)
	}
	for _, u := range h.unitList() {
		if !strings.Contains(u, ".") {
			return fmt.Errorf("--health-units: %q is not a unit name (foo.service)", u)
		}
	}
	return nil
}

func (h *healthOptions) unitList() []string {
	var out []string
	for _, u := range strings.Split(h.units, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// gate builds the health gate on probe; observe counts its results (nil:
// not counted).
func (h *healthOptions) gate(probe phases.HealthProbe, observe func(result string)) *phases.HealthGate {
	return &phases.HealthGate{
		Probe: probe, Units: h.unitList(), Command: strings.Fields(h.command), Timeout: h.timeout, Observe: observe,
	}
}
