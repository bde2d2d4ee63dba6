// Package localwal is the write-ahead-log segment format shared by ingest
// pods and the siglake sidecar: one Arrow IPC stream per segment, one table
// and one stream per segment, identity in schema metadata, sealed by an
// atomic rename. It has the validating reader the drain uses (typed rejects
// with stable reason codes, bounded memory on corrupt input), the directory
// scan, quarantine, and the crash recovery of unsealed segments. The writer
// ingest uses (rolls by size, age and schema change; sequence numbers that
// never repeat, persisted in STREAM) is localwal/walwriter.
//
// The on-disk contract is docs/wal-format.md.
package localwal
