package lake

import (
	"encoding/json"
	"testing"

	"github.com/apache/iceberg-go"
)

// Today's stored forms: a decode followed by an encode gives back the same bytes, so a change of
// codec never rewrites what tables already hold (docs/format/table-properties.md).

func TestSkippedGolden(t *testing.T) {
	const path = "s3://lake/logs/app/data/ts_day=2026-01-02/00000-1-a.parquet"
	const stored = `{"path":"s3://lake/logs/app/data/ts_day=2026-01-02/00000-1-a.parquet","class":"corrupt","cause":"parquet: invalid magic",` +
		`"at":"2026-01-02T03:04:05.123456789Z","failures":3,"kind":"level"}`
	got := SkippedFiles(iceberg.Properties{SkippedKey(path): stored})
	s, ok := got[path]
	if !ok {
		t.Fatalf("SkippedFiles(%s) = %v, want the entry of %s", stored, got, path)
	}
	b, err := json.Marshal(s)
	if err != nil || string(b) != stored {
		t.Fatalf("re-encoded %s (%v), want %s", b, err, stored)
	}
	if k := SkippedKey(path); k != SkippedPrefix+"cb23d87126a11e3356b5a625" {
		t.Fatalf("SkippedKey = %s", k)
	}
}
