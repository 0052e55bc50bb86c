package main

import (
	"flag"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// byteSize is a flag value of a byte count, written as a Kubernetes
// quantity ("16Mi", "64Mi", "1048576").
type byteSize struct{ n *int64 }

func (s byteSize) String() string {
	if s.n == nil {
		return ""
	}
	return resource.NewQuantity(*s.n, resource.BinarySI).String()
}

func (s byteSize) Set(v string) error {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return fmt.Errorf("want a byte count such as 16Mi: %w", err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("want a positive whole byte count such as 16Mi, got %s", v)
	}
	*s.n = n
	return nil
}

// count is a flag value of a positive whole number.
type count struct{ n *int }

func (c count) String() string {
	if c.n == nil {
		return ""
	}
	return strconv.Itoa(*c.n)
}

func (c count) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return fmt.Errorf("want a positive whole number, got %q", v)
	}
	*c.n = n
	return nil
}

// limitFlags sets l to the default caps and registers the flags that change
// them. ref "" describes each flag (the daemon's own); else the help refers
// to the daemon's flag ("the daemon's" --max-files, for plan and render).
func limitFlags(fs *flag.FlagSet, l *plan.Limits, ref string) {
	*l = plan.DefaultLimits()
	help := func(name, own string) string {
		if ref == "" {
			return own
		}
		return ref + " --" + name
	}
	fs.Var(byteSize{&l.MaxFileSize}, "max-file-size", help("max-file-size",
		"cap on one file's decoded contents (gzip and base64 decoded, appends included); a config with a bigger file is refused in prepare"))
	fs.Var(byteSize{&l.MaxConfigSize}, "max-config-size", help("max-config-size",
		"cap on one config's decoded files, unit contents, drop-ins and SSH keys together; a bigger config is refused in prepare"))
	fs.Var(count{&l.MaxFiles}, "max-files", help("max-files",
		"cap on the count of one config's storage.files entries; a config with more is refused in prepare"))
	fs.Var(count{&l.MaxUnits}, "max-units", help("max-units",
		"cap on the count of one config's systemd units plus their drop-ins; a config with more is refused in prepare"))
	fs.Var(count{&l.MaxPathDepth}, "max-path-depth", help("max-path-depth",
		"cap on the elements of a file's path (/etc/a is 2); a config with a deeper path is refused in prepare"))
}
