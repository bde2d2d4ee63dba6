package fold

import (
	"testing"

	"github.com/apache/iceberg-go"
)

// TestSpecGolden: today's stored specification decodes and encodes back to the same bytes, so a
// change of codec never rewrites what tables hold (docs/format/table-properties.md).
func TestSpecGolden(t *testing.T) {
	const stored = `{"version":1,"bucket":"1m","keys":["service","level"],"aggregates":[{"column":"count","func":"sum"},` +
		`{"column":"latency_max","func":"max"}],"tiers":[{"after":"7d","bucket":"1h"},{"after":"30d","bucket":"1d"}]}`
	s, ok, err := SpecProperty.Read(iceberg.Properties{Property: stored})
	if err != nil || !ok {
		t.Fatalf("decode %s: %v, %v", stored, ok, err)
	}
	v, err := s.Encode()
	if err != nil || v != stored {
		t.Fatalf("re-encoded %s (%v), want %s", v, err, stored)
	}
}
