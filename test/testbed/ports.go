package testbed

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// portPool hands out the daemons' /metrics addresses. A daemon listens on
// its address each time it starts (every boot of its node), so the port
// must stay its own while the daemon is down: ports are picked below the
// kernel's ephemeral range, where no outgoing connection of the host (the
// API clients of all the bed's daemons and tests) takes one as its local
// port, and never handed out twice by one bed, whose nodes start side by
// side in parallel tests.
type portPool struct {
	mu   sync.Mutex
	used map[int]bool
}

// lowestPort is the lowest port handed out: above the well-known and
// registered services a test host might run.
const lowestPort = 20000

func (p *portPool) addr() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used == nil {
		p.used = map[int]bool{}
	}
	hi := ephemeralStart()
	if hi-lowestPort < 1000 {
		return anyFreeAddr() // no room below the range: the kernel's pick
	}
	for range 200 {
		port := lowestPort + rand.IntN(hi-lowestPort)
		if p.used[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken by another process
		}
		l.Close()
		p.used[port] = true
		return addr, nil
	}
	return "", fmt.Errorf("finding a free port between %d and %d", lowestPort, hi)
}

// ephemeralStart is the first port of the kernel's ephemeral range (32768
// when it cannot be read).
func ephemeralStart() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 32768
	}
	if lo, err := strconv.Atoi(f[0]); err == nil {
		return lo
	}
	return 32768
}

func anyFreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
