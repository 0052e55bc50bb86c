package controlplane

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// setNice gives every thread of process pid the nice value nice (0: left
// as it is). A nice value is a thread's own on Linux: each thread there is
// set, and threads started later inherit it from the one that starts them.
func setNice(pid, nice int) error {
	if nice == 0 {
		return nil
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return fmt.Errorf("listing the threads of process %d: %w", pid, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
			return fmt.Errorf("setting the nice value of thread %d of process %d: %w", tid, pid, err)
		}
	}
	return nil
}
