// Package sidecar is the siglake process: it starts the rooms in order (memory defaults, the HTTP
// listener, the WAL buffer, gossip and membership, the lake) and runs the drain and maintenance
// loops until a stop, mapping the process's options onto each room's own options. The loops'
// protocols live in the rooms under sidecar/; this package wires them and reports their status.
package sidecar
