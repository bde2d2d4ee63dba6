package sidecar

import (
	"hash/fnv"

	"github.com/apache/arrow-go/v18/arrow"
)

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
