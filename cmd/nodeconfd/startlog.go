package main

import (
	"flag"
	"net/url"
	"runtime"
	"runtime/debug"
	"sort"

	"go.uber.org/zap"
)

// shownValue is a flag's value as the start line logs it. The flags that
// may hold a secret are never logged: a webhook URL often carries a token
// in its path, a command line a password or a header. A Prometheus URL
// shows its scheme and host only.
func shownValue(name, v string) string {
	switch name {
	case "notify-url", "health-command", "reboot-check-command":
		return "<redacted>"
	case "prometheus-url":
		return hostOnly(v)
	}
	return v
}

// givenFlags returns the flags of fs whose value is not their default, as
// the start line logs them (shownValue).
func givenFlags(fs *flag.FlagSet) map[string]string {
	out := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if v := f.Value.String(); v != f.DefValue {
			out[f.Name] = shownValue(f.Name, v)
		}
	})
	return out
}

// hostOnly is a URL's scheme and host, the rest redacted.
func hostOnly(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return "<redacted>"
	}
	return u.Scheme + "://" + u.Host + "/<redacted>"
}

// logVersion logs, once at start, the release this process was built from
// and the flags it was given other values than the defaults.
func logVersion(log *zap.Logger, command string, flags map[string]string) {
	names := make([]string, 0, len(flags))
	for n := range flags {
		names = append(names, n)
	}
	sort.Strings(names)
	fields := make([]zap.Field, 0, len(names))
	for _, n := range names {
		fields = append(fields, zap.String(n, flags[n]))
	}
	rev := buildRevision()
	if rev == "" {
		rev = "unknown" // as nodeconfd_build_info says
	}
	log.Info("Starting nodeconfd", zap.String("command", command), zap.String("version", version),
		zap.String("revision", rev), zap.String("goVersion", runtime.Version()), zap.Dict("flags", fields...))
}

// buildRevision is the source revision: -X main.revision at build time,
// else the one the Go toolchain recorded, else "" (a -buildvcs=false build
// such as the reproducible image's; its manifest names the commit).
func buildRevision() string {
	if revision != "" {
		return revision
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}
