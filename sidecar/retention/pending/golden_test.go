package pending

import (
	"encoding/json"
	"testing"

	"github.com/apache/iceberg-go"
)

// Today's stored form of a pending deletion decodes and encodes back to the same bytes, so a
// change of codec never rewrites what tables hold (docs/format/table-properties.md).
func TestPendingGolden(t *testing.T) {
	for _, stored := range []string{
		`{"version":1,"id":"20260102T030405Z-a1b2c3","files":["s3://lake/logs/app/data/a.parquet","s3://lake/logs/app/data/b.parquet"],` +
			`"count":2,"bytes":123456,"removed_at":"2026-01-02T03:04:05.5Z","after_sequence":42,"after_snapshot_id":987654321,"after_timestamp_ms":1767323045000}`,
		`{"version":1,"id":"20260102T030405Z-d4e5f6","list":"s3://lake/logs/app/metadata/siglake-retention-20260102T030405Z-d4e5f6.json",` +
			`"count":40,"bytes":99,"removed_at":"2026-01-02T03:04:05Z","after_sequence":0,"after_snapshot_id":5,"after_timestamp_ms":7,"deleting":true}`,
	} {
		var probe struct{ ID string }
		_ = json.Unmarshal([]byte(stored), &probe)
		ps, errs := List(iceberg.Properties{Prefix + probe.ID: stored})
		if len(errs) > 0 || len(ps) != 1 {
			t.Fatalf("decode %s: %v %v", stored, ps, errs)
		}
		b, err := json.Marshal(ps[0])
		if err != nil || string(b) != stored {
			t.Fatalf("re-encoded %s (%v), want %s", b, err, stored)
		}
	}
}
