// Package buffer is the WAL buffer: an opt-in read API (its own listener) that serves the rows
// of sealed WAL segments not yet committed, as Arrow IPC streams, so a reader sees the last
// seconds of logs during the commit batching delay (spec "Commit-accumulation batching").
//
// The promise (DESIGN.md, promise 12): a reader that passes the marks of the snapshot it read
// gets exactly the sealed rows above them, or a refusal to retry (409), never a gap or a
// duplicate. The stream marks the drain commits with each batch's files are the sequence numbers
// that make this checkable; Decide is the pure rule, docs/wal-buffer.md its proof sketch.
//
// The parts: sidecar/buffer/segments decides which segments an answer holds (Decide, pure, from
// the directory listings, the retained segments and the table's marks) and keeps committed
// segments a short while (Retention, the drain's Retire hook) with the chain of marks in their
// names; sidecar/buffer/listen guards the listener (tokens, client certificates, TLS, timeouts);
// this package is the server: Server, the thin HTTP handler that parses a request (serve.go),
// plans its answer while a failure can still be a status (prepare.go: list, read the marks,
// decide, open, bind the query to the columns) and streams it segment by segment within a memory
// share, filtered by the grammar of sidecar/rows (answer.go), and Start, the service around it
// (its listener and the retention sweep); sidecar/buffer/reader is the
// reader's side (the query's wire form, Client, Buffers, ReadConsistent and `siglake tail`),
// which a query engine uses too.
package buffer
