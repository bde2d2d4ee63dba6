package puffinidx

import "testing"

// TestRegistrationGolden: today's stored registration decodes and encodes back to the same
// bytes, so a change of codec never rewrites what tables hold (docs/format/table-properties.md).
func TestRegistrationGolden(t *testing.T) {
	const file = "s3://lake/logs/app/data/00000-1-0f8c6a.parquet"
	const stored = `{"data_file":"s3://lake/logs/app/data/00000-1-0f8c6a.parquet","sidecars":[{"path":"s3://lake/logs/app/metadata/invidx/x.puffin",` +
		`"columns":["trace_id","user"],"snapshot_id":4242}]}`
	reg, err := Parse(map[string]string{Key(file): stored})
	if err != nil {
		t.Fatal(err)
	}
	if got := reg[file].Encode(); got != stored {
		t.Fatalf("re-encoded %s, want %s", got, stored)
	}
}
