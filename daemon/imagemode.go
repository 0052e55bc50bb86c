package daemon

import "github.com/nodeconfd/nodeconfd/phases"

// phaseList is the list of an update: with ImageModeStatus, the write
// phase also reports the split of AppliedFilesAndOS (ensureMCN adds or
// removes the split conditions as the daemon starts).
func (d *Daemon) phaseList() []phases.Item {
	return phases.List(phases.ListOptions{ImageModeStatus: d.ImageModeStatus})
}
