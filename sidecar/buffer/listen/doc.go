// Package listen is the WAL buffer listener's security and limits: who may read (Auth: bearer
// tokens from a file re-read when it changes, verified client certificates), TLS whose files
// rotate without a restart (ServerTLS), the connection timeouts with a deadline per write of an
// answer (Timeouts, WriteDeadlines), what a listener beyond loopback risks (Exposure), and the
// metrics of the refusals. It serves no rows: sidecar/buffer puts its handler behind these.
package listen
