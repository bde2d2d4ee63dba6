package localwal

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/localwal/internal/recordcheck"
	"github.com/siglake/siglake/localwal/internal/waltest"
)

// benchBatchRows is the rows of a benchmark batch.
const benchBatchRows = 1000

// BenchmarkValidate compares recordcheck.Full with Arrow's full validation on
// the records of SIGLAKE_BENCH_WAL's sealed segments (a walgen WAL, whose
// map of attributes nests strings), or on generated log batches without it.
func BenchmarkValidate(b *testing.B) {
	var recs []arrow.RecordBatch
	var raw int64
	if dir := os.Getenv("SIGLAKE_BENCH_WAL"); dir != "" {
		segs, err := Scan(dir)
		if err != nil || len(segs) == 0 {
			b.Fatalf("no sealed segments in %s (%v)", dir, err)
		}
		for _, s := range segs {
			seg, err := ReadAll(s.Path, ReadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer seg.Release()
			recs = append(recs, seg.Records...)
			raw += s.Size
		}
	} else {
		recs, raw = waltest.Batches(64, benchBatchRows)
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
	}
	for _, v := range []struct {
		name     string
		validate func(arrow.RecordBatch) error
	}{{"arrow", arrowValidate}, {"localwal", recordcheck.Full}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(raw)
			for i := 0; i < b.N; i++ {
				for _, r := range recs {
					if err := v.validate(r); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
