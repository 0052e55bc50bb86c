package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/nodeconfd/nodeconfd/daemon/eta"
	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/preview"
)

// planETA is how long the update of action would take if it started now,
// predicted as the node's daemon predicts it: from the node's history
// (eta.json in its state folder, read through host when plan runs on the
// node), else from the defaults. An unreadable history is said on stderr
// and the defaults are used.
func planETA(host *hostfs.FS, action plan.PostAction, now time.Time, stderr io.Writer) *preview.ETA {
	h := eta.History{Version: eta.Version}
	if host != nil {
		data, err := host.ReadState(eta.FileName)
		if err == nil {
			h, err = eta.Decode(data)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintln(stderr, "nodeconfd plan: ETA from the defaults:", err)
		}
	}
	var names []string
	for _, p := range engine.Steps(phases.All()) {
		names = append(names, p.Name)
	}
	kind := eta.KindOfPostAction(action)
	d, n := h.Remaining(kind, names)
	return &preview.ETA{PostAction: kind, Seconds: d.Seconds(), EstimatedFinish: now.Add(d).Truncate(time.Second), BasedOn: n}
}
