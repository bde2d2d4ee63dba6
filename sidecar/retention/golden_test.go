package retention

import (
	"testing"

	"github.com/apache/iceberg-go"
)

// Today's stored forms decode and encode back to the same bytes, so a change of codec never
// rewrites what tables hold (docs/format/table-properties.md).

func TestPolicyGolden(t *testing.T) {
	const stored = `{"version":1,"period":"30d","rules":[{"where":[{"column":"level","values":["debug","trace"]}],"period":"7d","priority":2},` +
		`{"where":[{"column":"service","values":["audit"]}],"period":"0"}]}`
	p, ok, err := PolicyProperty.Read(iceberg.Properties{Property: stored})
	if err != nil || !ok {
		t.Fatalf("decode %s: %v, %v", stored, ok, err)
	}
	v, err := p.Encode()
	if err != nil || v != stored {
		t.Fatalf("re-encoded %s (%v), want %s", v, err, stored)
	}
}
