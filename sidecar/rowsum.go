package sidecar

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
)

// EventColumns are the columns of the built-in events table, in schema order.
var EventColumns = []string{"timestamp", "service", "host", "severity", "trace_id", "span_id", "raw", "attributes"}

// RowSum is an order-independent fingerprint of a multiset of rows: the row count and the sum
// (mod 2^64) of a 64-bit hash of each row's canonical text over the named columns. Two sets of rows
// with the same RowSum hold, with overwhelming probability, the same rows the same number of times;
// tests and `siglake demo` use it to show that a drain or rewrite kept every row exactly once.
type RowSum struct {
	Rows uint64 `json:"rows"`
	Sum  uint64 `json:"sum"`
}

// Add folds every row of rec into s, using columns (by name, in this order); a column rec lacks
// counts as null.
func (s *RowSum) Add(rec arrow.RecordBatch, columns []string) {
	cols := make([]arrow.Array, len(columns))
	for i, name := range columns {
		if idx := rec.Schema().FieldIndices(name); len(idx) > 0 {
			cols[i] = rec.Column(idx[0])
		}
	}
	h := fnv.New64a()
	buf := make([]byte, 0, 256)
	for r := 0; r < int(rec.NumRows()); r++ {
		buf = buf[:0]
		for _, c := range cols {
			if c == nil || c.IsNull(r) {
				buf = append(buf, 0xff, 0)
			} else {
				buf = append(buf, c.ValueStr(r)...)
				buf = append(buf, 0)
			}
		}
		h.Reset()
		h.Write(buf)
		s.Sum += h.Sum64()
		s.Rows++
	}
}

// Merge adds o to s.
func (s *RowSum) Merge(o RowSum) { s.Rows += o.Rows; s.Sum += o.Sum }

// TableRowSum reads every row of t's current snapshot through iceberg-go's scanner (a reader we
// did not write) and fingerprints it.
func TableRowSum(ctx context.Context, t *table.Table, columns []string) (RowSum, error) {
	var sum RowSum
	if t.CurrentSnapshot() == nil {
		return sum, nil
	}
	_, recs, err := t.Scan().ToArrowRecords(ctx)
	if err != nil {
		return sum, fmt.Errorf("scan %v: %w", t.Identifier(), err)
	}
	for rec, err := range recs {
		if err != nil {
			return sum, fmt.Errorf("scan %v: %w", t.Identifier(), err)
		}
		sum.Add(rec, columns)
		rec.Release()
	}
	return sum, nil
}
