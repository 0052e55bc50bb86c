package testbed

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
)

// bridge is the host bridge a cluster bed's nodes are on (each its own
// network namespace, nspawn's veth into the bridge): 10.250.X.0/24 for an
// X no host interface uses yet, the host at .1. The API server listens
// there too.
type bridge struct {
	name   string
	prefix netip.Prefix
}

func newBridge() (*bridge, error) {
	used, err := hostPrefixes()
	if err != nil {
		return nil, err
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	b := &bridge{name: "ncd" + hex.EncodeToString(suffix)}
	for x := 1 + int(suffix[0])%200; ; x++ {
		if x > 254 {
			return nil, fmt.Errorf("creating bridge %s: every 10.250.X.0/24 is in use", b.name)
		}
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 250, byte(x), 0}), 24)
		if !used(p) {
			b.prefix = p
			break
		}
	}
	for _, args := range [][]string{
		{"link", "add", b.name, "type", "bridge"},
		{"addr", "add", b.Gateway().String() + "/24", "dev", b.name},
		{"link", "set", b.name, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			_ = b.remove()
			return nil, fmt.Errorf("creating bridge %s: ip %s: %w: %s", b.name, strings.Join(args, " "), err, out)
		}
	}
	return b, nil
}

// Gateway is the host's address on the bridge.
func (b *bridge) Gateway() netip.Addr { return b.prefix.Addr().Next() }

// addr is the address of node i (0, 1, …): .2, .3, …
func (b *bridge) addr(i int) netip.Addr {
	a := b.prefix.Addr().As4()
	a[3] = byte(2 + i)
	return netip.AddrFrom4(a)
}

func (b *bridge) remove() error {
	if out, err := exec.Command("ip", "link", "del", b.name).CombinedOutput(); err != nil {
		return fmt.Errorf("removing bridge %s: %w: %s", b.name, err, out)
	}
	return nil
}

// hostPrefixes returns a test of whether a prefix overlaps any address of
// the host's interfaces.
func hostPrefixes() (func(netip.Prefix) bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing the host's addresses: %w", err)
	}
	var have []netip.Prefix
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			have = append(have, p.Masked())
		}
	}
	return func(p netip.Prefix) bool {
		for _, h := range have {
			if h.Overlaps(p) {
				return true
			}
		}
		return false
	}, nil
}
