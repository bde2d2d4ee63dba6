// Package gossip is this process's membership in the cluster of siglake
// sidecars: it runs a hashicorp/memberlist member (encrypted with the
// cluster's keys, behind its cluster label), gossips the member's metadata
// (roles, catalog identity, leaving), and keeps the view of who is alive from
// which it answers one question: may this process maintain table T now?
//
// The view (view.go) is the deterministic core: membership observations and
// the time in, owners of tables out, with settle periods and name-conflict
// holds; Cluster feeds it from memberlist's events. The rest lives apart:
// gossip/lease is the pure election rule (rendezvous hashing), gossip/keys
// the key file and keyring rotation, gossip/internal/mllog memberlist's log
// lines, gossip/internal/transport the counting transport. docs/gossip.md
// describes the protocol and its measurements.
package gossip
