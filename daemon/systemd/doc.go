// Package systemd is the daemon's view of the node's systemd and logind, reached over the node's D-Bus
// system bus.
//
// Systemd is the interface the rest of the daemon uses; its methods are named after the systemctl
// command they stand for. DBus implements it over a real bus (see Dial) and Fake records calls for
// tests of the daemon's other packages.
package systemd
