package daemon

// waiting tells the metrics (Env.Observer) what the daemon's own waits,
// outside an update's phases, wait for: "" once nothing holds.
func (d *Daemon) waiting(reason string) {
	if d.Env.Observer != nil {
		d.Env.Observer.Waiting(reason)
	}
}
