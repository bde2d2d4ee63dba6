// Package merge writes siglake's Parquet data files and rewrites bins of them.
//
// Every output is sorted by the table's timestamp column, split only where the
// timestamp changes (so the files one call writes are pairwise time-disjoint),
// and carries the search metadata described in docs/file-format.md. The drain
// calls WriteSorted for generation-0 files; maintenance calls Rewrite, which
// picks one of four bounded merge paths (in-memory, streaming k-way,
// page-bounded plan, row-group splice) with ChoosePath.
//
// Rooms: this package holds the writer, the merge paths and the row filter;
// merge/index the search metadata (footer indexes, blooms); merge/folding the
// aggregate fold the in-memory and k-way paths run their merged stream through.
//
// House rule: merge imports arrow, parquet and iceberg-go's FileIO, never
// prometheus or zap (internal/house tests it). Rewrite returns what it
// measured in its RewriteResult (bytes, path, duration, skipped indexes); the
// caller's observer records it (sidecar/instrument).
package merge
