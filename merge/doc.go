// Package merge rewrites bins of siglake's Parquet data files: the entry point
// (Rewrite, its options and result, ChoosePath) and the two paths that decode
// every row (in-memory and streaming k-way), where the row filter of delete
// tasks and aggregate folding run.
//
// Every output is sorted by the table's timestamp column, split only where the
// timestamp changes (so the files one call writes are pairwise time-disjoint),
// and carries the search metadata described in docs/file-format.md. The drain
// writes generation-0 files with writer.WriteSorted; maintenance calls Rewrite,
// which picks one of four bounded merge paths (in-memory, streaming k-way,
// page-bounded plan, row-group splice) with ChoosePath.
//
// Rooms, each a package with one job:
//   - merge: Rewrite, the in-memory and k-way paths, the row filter, file
//     naming and the memory budget;
//   - merge/writer: the Parquet writer every path writes through;
//   - merge/input: the inputs, their streams of rows and their errors;
//   - merge/kmerge: the k-way merge order and the chunk assembler;
//   - merge/splice and merge/pagebounded: the other two merge paths;
//   - merge/density: where outputs are cut by row density;
//   - merge/chunksum: the per-chunk checksums in the footer;
//   - merge/index: the search metadata (footer indexes, blooms);
//   - merge/folding: the aggregate fold the decoding paths run their
//     merged stream through.
//
// House rule: merge and its sub-packages import arrow, parquet and iceberg-go's
// FileIO, never prometheus or zap (internal/house tests it). Rewrite returns
// what it measured in its RewriteResult (bytes, path, duration, skipped
// indexes); the caller's observer records it (sidecar/instrument).
package merge
