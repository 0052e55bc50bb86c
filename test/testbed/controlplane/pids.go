package controlplane

// APIServerPID is the process ID of the running kube-apiserver (0 when
// none runs), for benchmarks that read its CPU time and memory in /proc.
func (c *ControlPlane) APIServerPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiserver == nil || c.apiserver.exited() {
		return 0
	}
	return c.apiserver.cmd.Process.Pid
}

// EtcdPID is the process ID of the running etcd (0 when none runs).
func (c *ControlPlane) EtcdPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etcd == nil || c.etcd.exited() {
		return 0
	}
	return c.etcd.cmd.Process.Pid
}
