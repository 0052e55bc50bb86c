// Package controller runs `nodeconfd controller` on a test bed of its own
// (a real API server, systemd nodes with their daemons), with the shipped
// pools and the controller's own ServiceAccount, token and admission
// policy, and checks the rollout as an administrator would watch it. Its
// tests are serial: the pools are cluster-wide.
package controller

import (
	"testing"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) {
	testbed.Main(m, "nodeconfd-controller-", nil, func(b *testbed.Bed) { bed = b })
}
