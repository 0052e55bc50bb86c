package kube

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// A finished update's patch removes the estimate (null in a merge patch),
// and a running one's the finish; the times are whole seconds in UTC.
func TestETAPatch(t *testing.T) {
	start := time.Date(2026, 12, 6, 10, 0, 3, 500, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		e    status.ETA
		want string
	}{
		{status.ETA{PostAction: "Reboot", Started: start, EstimatedFinish: start.Add(90 * time.Second), BasedOn: 2},
			`{"basedOn":2,"estimatedFinish":"2026-12-06T09:01:33Z","finished":null,"postAction":"Reboot","started":"2026-12-06T09:00:03Z"}`},
		{status.ETA{PostAction: "None", Started: start, Finished: start.Add(time.Second)},
			`{"basedOn":0,"estimatedFinish":null,"finished":"2026-12-06T09:00:04Z","postAction":"None","started":"2026-12-06T09:00:03Z"}`},
	} {
		got, _ := json.Marshal(eta(&tc.e))
		if string(got) != tc.want {
			t.Errorf("eta(%+v) = %s, want %s", tc.e, got, tc.want)
		}
	}
}
