package nspawn

import (
	"bytes"
	"sync"
)

// Console collects a node's console output (Options.Log) from the
// goroutines that copy it; String returns what it holds so far, e.g. to
// print when a test fails.
type Console struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *Console) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
