// Package merge writes siglake's Parquet data files and rewrites bins of them.
//
// Every output is sorted by the table's timestamp column, split only where the
// timestamp changes (so the files one call writes are pairwise time-disjoint),
// and carries the search metadata described in docs/file-format.md. The drain
// calls WriteSorted for generation-0 files; maintenance calls Rewrite, which
// picks one of three bounded merge paths (in-memory, streaming k-way,
// page-bounded plan) with ChoosePath.
package merge
