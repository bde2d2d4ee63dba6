// Package index builds and reads siglake's search metadata: versioned
// key-value entries in the Parquet footer (format: docs/file-format.md).
//
// Everything here is pure: the builder takes Arrow columns, the reader takes
// footer key-value pairs. Absent or undecodable metadata answers "maybe"
// (promise 7: gaps cost pruning, never correctness).
package index

// Footer keys. The version is part of the key so a reader never misreads an
// entry written by a newer format; it ignores keys it does not know.
const (
	KeyGroups      = "siglake.groups.v1"
	KeyTimeBuckets = "siglake.timebuckets.v1"
	KeyRowGroups   = "siglake.rgbloom.v2"
	// KeyRowGroupsV1 is the row-group entry of files written before the split-block blooms
	// (classic blooms only). Read, never written: v2 is a new key, not a new flag under v1,
	// because an older reader took an unknown flag for "nothing follows" and parsed on.
	KeyRowGroupsV1  = "siglake.rgbloom.v1"
	KeyFileTrigrams = "siglake.rawtrigram.v1"
	// KeyInvertedPrefix is followed by the column name.
	KeyInvertedPrefix = "siglake.invidx.v1."
)
