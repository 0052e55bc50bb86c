package drift

import (
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// enablementDirs returns the folders in which enabling or disabling one of
// cfg's units changes a link: the .wants, .requires and .upholds folders of
// /etc/systemd/system (a mask, and a folder made by an enable, show in
// /etc/systemd/system itself, which is watched for every unit). Nil when no
// unit of cfg says whether it is enabled.
func enablementDirs(abs func(string) string, cfg plan.Config) []string {
	if !slices.ContainsFunc(slices.Collect(maps.Values(cfg.Units)), func(u plan.Unit) bool {
		return u.Enabled != nil || u.Mask
	}) {
		return nil
	}
	entries, err := os.ReadDir(abs("/etc/systemd/system"))
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() && (strings.HasSuffix(n, ".wants") || strings.HasSuffix(n, ".requires") || strings.HasSuffix(n, ".upholds")) {
			dirs = append(dirs, "/etc/systemd/system/"+n)
		}
	}
	return dirs
}
