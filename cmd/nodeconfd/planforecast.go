package main

import (
	"context"
	"flag"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/cluster/surge"
	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/phases/preview"
)

// forecastOptions are the daemon's drain flags that change what its drain
// would do, so that `plan --node` forecasts the drain the daemon runs.
type forecastOptions struct {
	evictUnowned bool
	last         labels.Selector
	surgeMax     int
}

func (f *forecastOptions) flags(fs *flag.FlagSet) {
	fs.BoolVar(&f.evictUnowned, "evict-unowned-pods", false, "with --node: forecast the drain as a daemon with this flag runs it")
	selectorFlag(fs, "drain-last-selector", "with --node: forecast the drain as a daemon with this flag runs it", &f.last)
	fs.IntVar(&f.surgeMax, "drain-surge-max", 1, "with --node: forecast the drain as a daemon with this flag runs it")
}

// selectorFlag defines a label selector flag; an empty one leaves dst nil
// (selects nothing), a malformed one is refused naming the flag.
func selectorFlag(fs *flag.FlagSet, name, usage string, dst *labels.Selector) {
	fs.Func(name, usage, func(v string) error {
		sel, err := labels.Parse(v)
		if err != nil {
			return fmt.Errorf("not a label selector: %w", err)
		}
		if !sel.Empty() {
			*dst = sel
		}
		return nil
	})
}

// forecast is what node's drain would do now (drain.Drainer.Forecast).
func (f forecastOptions) forecast(ctx context.Context, api kubeapi.API, node string) (*preview.DrainForecast, error) {
	d := &drain.Drainer{Client: api, NodeName: node, EvictUnowned: f.evictUnowned, Last: f.last,
		Surge: drain.SurgeOptions{Max: f.surgeMax}}
	fc, err := d.Forecast(ctx)
	if err != nil || fc.Refused != "" {
		return &fc, err
	}
	if fc.WaitsBeforeCordon, err = d.WouldBlock(ctx); err != nil {
		return nil, err
	}
	return &fc, nil
}

// checkSurgeMax refuses a --drain-surge-max past surge.MaxSlots: the
// admission policy admits only that many slot Leases, so a daemon told to
// use more would be refused the slots past them at every surge.
func checkSurgeMax(n int) error {
	if n < 0 || n > surge.MaxSlots {
		return fmt.Errorf("--drain-surge-max %d: want 0 to %d (the admission policy nodeconfd-surge admits only the "+
			"surge slot Leases nodeconfd-surge-0 … nodeconfd-surge-%d)", n, surge.MaxSlots, surge.MaxSlots-1)
	}
	return nil
}
