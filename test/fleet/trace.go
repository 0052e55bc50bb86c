package fleet

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// statusTrace prints each status write of one node (-fleet.trace-status):
// the conditions it changed, so that the writes of an update can be read
// one by one.
type statusTrace struct {
	w    io.Writer
	node string
	mu   sync.Mutex
	prev []metav1.Condition
	n    int
}

func (s *statusTrace) written(conds []metav1.Condition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var changed []string
	for _, c := range conds {
		p := status.Find(s.prev, c.Type)
		if p == nil || p.Status != c.Status || p.Reason != c.Reason || p.Message != c.Message {
			msg := c.Message
			if len(msg) > 60 {
				msg = msg[:57] + "..."
			}
			changed = append(changed, fmt.Sprintf("%s=%s %q", c.Type, c.Status, msg))
		}
	}
	s.n++
	fmt.Fprintf(s.w, "%s status write %d of %s: %s\n", time.Now().Format("15:04:05.000"), s.n, s.node,
		strings.Join(changed, "; "))
	s.prev = append([]metav1.Condition(nil), conds...)
}
