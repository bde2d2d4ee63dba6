// Package search is `siglake search`: an ordered scan over a table's current snapshot that uses
// the search metadata siglake writes (docs/file-format.md) to read as little as it can, and says
// what that cost (docs/search.md).
//
// A search runs in stages, each of which may only drop what cannot match (promise 7: absent
// metadata answers "maybe", so it costs pruning, never rows):
//
//  1. manifest: iceberg-go's scan planning drops files by partition and column bounds;
//  2. footer: the surviving files' footers, opened lazily in scan order, drop files by their time
//     buckets, group counts, whole-file trigram bloom, row-group blooms and inverted indexes (from
//     the footer or a registered Puffin sidecar);
//  3. row groups: blooms, time bounds (the bloom entry or Parquet statistics) and index postings
//     drop row groups;
//  4. rows: every row of a row group that is read is evaluated exactly.
//
// Files are merged in timestamp order through a heap that opens a file only when the scan reaches
// its first timestamp, so disjoint files are read one after the other and only overlapping ones
// are open together; the scan stops once the limit is full.
//
// The pure parts are query compilation (query.go, over the grammar of sidecar/rows), the pruning
// decisions (prune.go) and the time-ordered merge (sidecar/search/ordered); file I/O through
// iceberg-go's FileIO is in file.go; Run in search.go wires them. sidecar/search/output prints
// the rows.
package search
