package writer

import (
	"strings"
	"testing"
)

// TestChoice: names parse whatever their case and spaces, a bad one is an error naming it and
// what is accepted, and an empty value resolves to the process default, else the fallback.
func TestChoice(t *testing.T) {
	c := &Choice[Encoder]{What: "parquet encoder", Accepted: Encoders, Fallback: EncoderArrow}
	if e, err := c.Parse(" Parquet-Go "); err != nil || e != EncoderParquetGo {
		t.Fatalf("parse: %q %v", e, err)
	}
	if _, err := c.Parse("duckdb"); err == nil || !strings.Contains(err.Error(), `parquet encoder "duckdb": accepted: arrow, parquet-go`) {
		t.Fatalf("bad name: %v", err)
	}
	if got := c.Resolve(""); got != EncoderArrow {
		t.Fatalf("no default: %q, want the fallback", got)
	}
	c.SetDefault(EncoderParquetGo)
	if got, own := c.Resolve(""), c.Resolve(EncoderArrow); got != EncoderParquetGo || own != EncoderArrow {
		t.Fatalf("with a default: empty resolves to %q, arrow to %q", got, own)
	}
}
