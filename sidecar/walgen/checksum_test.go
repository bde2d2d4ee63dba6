package walgen

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/localwal"
)

// TestSegmentsCarryChecksum: walgen's segments are version 2, with the CRC32C trailer the reader
// checks (docs/wal-format.md), like an ingest's.
func TestSegmentsCarryChecksum(t *testing.T) {
	o := RunOptions{WALDir: t.TempDir(), Stream: "test", Rows: 5000, BatchRows: 1000, SegmentSize: 1 << 20, RollAge: time.Second,
		Gen: Options{Seed: 2}}
	if _, err := Run(context.Background(), o, func(string, arrow.RecordBatch) {}); err != nil {
		t.Fatal(err)
	}
	segs, err := localwal.Scan(o.WALDir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("%d segments (%v)", len(segs), err)
	}
	for _, s := range segs {
		seg, err := localwal.ReadAll(s.Path, localwal.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if seg.Header.Version != 2 {
			t.Errorf("%s: version %d, want 2", s.Name, seg.Header.Version)
		}
		seg.Release()
	}
}
