package preview

import (
	"fmt"
	"strings"
	"time"
)

// ETA is how long the update would take if it started now, as the node's
// daemon predicts it (status.updateETA): from the node's own past updates
// of the same kind when plan reads them (--root-mount), else from the
// defaults. Waits (a pause, windows, budgets) are not counted.
type ETA struct {
	// PostAction is the kind predicted for: Reboot, Reload or None.
	PostAction string `json:"postAction"`
	// Seconds is the predicted duration; EstimatedFinish now plus it.
	Seconds         float64   `json:"seconds"`
	EstimatedFinish time.Time `json:"estimatedFinish"`
	// BasedOn is how many of the node's past updates of the kind say so;
	// 0: the defaults.
	BasedOn int `json:"basedOn"`
}

func (e *ETA) write(b *strings.Builder) {
	if e == nil {
		return
	}
	from := fmt.Sprintf("the median of the node's last %d %s updates, phase by phase", e.BasedOn, e.PostAction)
	if e.BasedOn == 0 {
		from = "nodeconfd's defaults for a " + e.PostAction + " update (the node's own history is read with --root-mount)"
	}
	d := time.Duration(e.Seconds * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(b, "ETA: about %s if it started now (by %s), waits not counted; from %s\n", d,
		e.EstimatedFinish.UTC().Format(time.RFC3339), from)
}
