// Package rollout holds the pool controller's pure decisions: which nodes
// are unavailable, which node gets the pool's rendered config next, and the
// pool's status (which pool a node is in is phases/pools, shared with the
// daemon). It reads API objects only
// (no clients, no I/O), so that every decision is table-tested; the
// controller in package controller reads the caches, calls these functions
// and writes what they decide. The annotations it reads are the daemon's,
// named once for both in package names.
package rollout

// ZoneLabel orders the rollout zone by zone, as upstream.
const ZoneLabel = "topology.kubernetes.io/zone"
