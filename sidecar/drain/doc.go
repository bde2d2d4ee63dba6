// Package drain is the drain loop: it turns sealed WAL segments into committed Iceberg data
// files exactly once (one commit per batch appends the files and moves the stream mark; only
// then are the segments removed), quarantines bad segments, and turns each batch's outcome into
// metrics, status and log lines. Its parts: batches (what to drain, grouped into batches),
// dayfiles (a batch's rows as one file set per day), marker (the in-flight marker that reports
// a killed run at the next start), metrics (the drain's metric definitions), handoff (the group
// committer a batch's commit goes to when group commit is on, and its heartbeat schedule).
package drain
