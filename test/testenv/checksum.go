package testenv

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/sidecar/rowsum"
)

// The row checksum is siglake's one row fingerprint (package sidecar/rowsum): DuckDB computes it
// natively (scripts/duckdb/check.mjs) and Go in rowsum, so a test can compare the rows we wrote
// with what an independent reader sees.

// RowSum accumulates the row checksum over record batches (rowsum.Sum).
type RowSum = rowsum.Sum

// RowChecksum is the row checksum over all rows of recs (see rowsum.Sum.Add for columns).
func RowChecksum(recs []arrow.RecordBatch, columns ...string) (uint64, error) {
	return rowsum.Checksum(recs, columns...)
}

// RowText returns the canonical text of row i of rec, for debugging a mismatch.
func RowText(rec arrow.RecordBatch, i int, columns ...string) (string, error) {
	return rowsum.Text(rec, i, columns...)
}
