package writer

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	icebergio "github.com/apache/iceberg-go/io"
)

// TestChoice: names parse whatever their case and spaces, a bad one is an error naming it and
// what is accepted, and an empty value resolves to the process default, else the fallback.
func TestChoice(t *testing.T) {
	c := &Choice[Encoder]{What: "parquet encoder", Accepted: Encoders, Fallback: EncoderArrow}
	if e, err := c.Parse(" Parquet-Go "); err != nil || e != EncoderParquetGo {
		t.Fatalf("parse: %q %v", e, err)
	}
	if _, err := c.Parse("duckdb"); err == nil || !strings.Contains(err.Error(), `parquet encoder "duckdb": accepted: auto, arrow, parquet-go`) {
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

// TestAutoEncoder: auto, the default, is arrow-go for a merge's sink and parquet-go for the
// drain's (each where it measured faster); a named encoder is that encoder for both.
func TestAutoEncoder(t *testing.T) {
	defer SetDefaultEncoder(EncoderDefault)
	for _, c := range []struct{ def, own, merge, drain Encoder }{
		{EncoderDefault, EncoderDefault, EncoderArrow, EncoderParquetGo}, // nothing set: auto
		{EncoderAuto, EncoderDefault, EncoderArrow, EncoderParquetGo},
		{EncoderArrow, EncoderDefault, EncoderArrow, EncoderArrow},
		{EncoderParquetGo, EncoderDefault, EncoderParquetGo, EncoderParquetGo},
		{EncoderArrow, EncoderParquetGo, EncoderParquetGo, EncoderParquetGo}, // the writer's own wins
		{EncoderParquetGo, EncoderAuto, EncoderArrow, EncoderParquetGo},
	} {
		SetDefaultEncoder(c.def)
		if m, d := c.own.resolve(), c.own.ForDrain(); m != c.merge || d != c.drain {
			t.Errorf("process %q, writer %q: merge %q drain %q, want %q and %q", c.def, c.own, m, d, c.merge, c.drain)
		}
	}
}

// TestSinkTakesTheProcessEncoder: a sink whose options name no encoder encodes with the process
// default, and its outputs say which encoder wrote them.
func TestSinkTakesTheProcessEncoder(t *testing.T) {
	defer SetDefaultEncoder(EncoderDefault)
	sc := partsSchema()
	rec := partsRecord(rand.New(rand.NewPCG(1, 2)), sc, 3000, 1_700_000_000_000_000)
	defer rec.Release()
	for _, c := range []struct{ def, own, want Encoder }{
		{EncoderDefault, EncoderDefault, EncoderArrow}, // auto: a merge's sink
		{EncoderParquetGo, EncoderDefault, EncoderParquetGo},
		{EncoderArrow, EncoderDefault, EncoderArrow},
		{EncoderArrow, EncoderParquetGo, EncoderParquetGo},
	} {
		SetDefaultEncoder(c.def)
		own := c.own
		p := filepath.Join(t.TempDir(), "out.parquet")
		opts := Options{Encoder: own, TimestampColumn: "timestamp"}.WithDefaults()
		outs, err := WriteSorted(context.Background(), icebergio.LocalFS{}, func(int) string { return p }, sc, []arrow.RecordBatch{rec}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(outs) != 1 || outs[0].Encoder != c.want || outs[0].Rows != 3000 {
			t.Errorf("process %q, options %q: outputs %+v, want one of 3000 rows by %q", c.def, own, outs, c.want)
		}
	}
}
