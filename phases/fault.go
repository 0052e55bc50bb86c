package phases

// fault tells the test-only fault-point hook, if any, that the named point
// of phase is reached; without a hook it builds no string.
func (r *Runner) fault(point, phase string) {
	if r.Fault != nil {
		r.Fault(point + phase)
	}
}
