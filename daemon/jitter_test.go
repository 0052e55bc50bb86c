package daemon

import (
	"io/fs"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/phases"
)

// stateHost is a host whose only state file is the applied config, or none.
type stateHost struct {
	phases.Host
	applied bool
}

func (h stateHost) ReadState(name string) ([]byte, error) {
	if h.applied && name == phases.AppliedFileName {
		return []byte("{}"), nil
	}
	return nil, fs.ErrNotExist
}

func TestStartDelay(t *testing.T) {
	tests := []struct {
		name    string
		jitter  time.Duration
		applied bool
		wantMax time.Duration // 0: no delay
	}{
		{"no jitter", 0, false, 0},
		{"ran here before", time.Minute, true, 0},
		{"first start on the node", time.Minute, false, time.Minute},
	}
	for _, tt := range tests {
		d := &Daemon{StartJitter: tt.jitter, Env: phases.Env{Host: stateHost{applied: tt.applied}}}
		spread := map[time.Duration]bool{}
		for i := 0; i < 20; i++ {
			got := d.startDelay()
			if got < 0 || got > tt.wantMax || (tt.wantMax > 0 && got == tt.wantMax) {
				t.Fatalf("%s: delay %s, want in [0, %s)", tt.name, got, tt.wantMax)
			}
			spread[got] = true
		}
		if tt.wantMax > 0 && len(spread) < 10 {
			t.Errorf("%s: 20 delays took only %d values", tt.name, len(spread))
		}
	}
}
