// Package writer writes siglake's Parquet data files: rows in timestamp order
// cut into row groups of a fixed length and into files that are pairwise
// time-disjoint (Sink), WriteSorted for the drain's batches, the row-group
// copy the splice path uses, the search metadata and chunk sums in the
// footer, and the small-window zstd codec. Every merge path writes through a
// Sink, so their outputs do not depend on the path.
package writer
