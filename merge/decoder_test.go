package merge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/test/testenv"
)

// decWrite is one k-way merge of the decoder property test; it checks the decoder that ran.
func decWrite(t *testing.T, label, dir string, dec Decoder, want Decoder, inputs []Input, sc *arrow.Schema, wo WriterOptions) []Output {
	t.Helper()
	res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "kway-"+string(dec)), 1),
		RewriteOptions{ForcePath: PathKWay, Decoder: dec, WriterOptions: wo})
	if err != nil {
		t.Fatalf("%s: k-way with decoder %s: %v", label, dec, err)
	}
	if res.Decoder != want {
		t.Fatalf("%s: asked for decoder %s, decoded with %q (want %s): %s", label, dec, res.Decoder, want, res.Reason)
	}
	return res.Outputs
}

// TestDecodersWriteTheSameRows: on random inputs of the output's schema, the k-way merge that
// decodes, merges and encodes on parquet-go values (SIGLAKE_MERGE_PARQUET_DECODER=parquet-go)
// writes the same rows in the same order into the same files and row groups, with the same
// search metadata, statistics, page indexes and valid chunk sums, as today's k-way on arrow-go;
// arrow-go, DuckDB and an iceberg-go table scan read the input's rows back from its files. An
// input of another schema (a column added since) sends the bin to arrow-go, and the result says
// why.
func TestDecodersWriteTheSameRows(t *testing.T) {
	duck := testenv.DuckDB(t)
	ice, sc := encSchemas(t)
	seeds := uint64(3)
	if long() {
		seeds = 9
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		r := rand.New(rand.NewPCG(seed, 361))
		dir := t.TempDir()
		// As in TestEncodersWriteTheSameRows: small row groups; one huge row group past the
		// dictionary limit; small files cut by size (only the rows compared).
		variant := (seed - 1) % 3
		wo := []WriterOptions{{RowGroupRows: 1000}, {RowGroupRows: 1 << 20}, {RowGroupRows: 1000, TargetFileBytes: 300_000}}[variant]
		rows := 2500
		if variant == 1 {
			rows = 6000
		}
		var inputs []Input
		var want []arrow.RecordBatch
		for i := 0; i < 3+r.IntN(3); i++ {
			base := int64(1_700_000_000_000_000) + r.Int64N(3000)
			rec := encRecord(r, sc, rows+r.IntN(rows), base, true)
			inputs = append(inputs, writeInput(t, dir, sc, rec, 1, []int{700, 1000, 1 << 20}[r.IntN(3)]))
			want = append(want, rec)
		}
		label := fmt.Sprintf("seed %d", seed)
		// Today's k-way with each encoder: with parquet-go's, the same files; with arrow-go's
		// (cut by size elsewhere when files are small), the same rows in the same order.
		wo.Encoder = writer.EncoderArrow
		today := decWrite(t, label, filepath.Join(dir, "arrow"), DecoderArrow, DecoderArrow, inputs, sc, wo)
		wo.Encoder = writer.EncoderParquetGo
		a := decWrite(t, label, dir, DecoderArrow, DecoderArrow, inputs, sc, wo)
		wo.Encoder = writer.EncoderAuto // the value path encodes with parquet-go whatever auto takes
		p := decWrite(t, label, dir, DecoderParquetGo, DecoderParquetGo, inputs, sc, wo)
		compareEncoderOutputs(t, label, sc, a, p)
		compareEncoderRows(t, label+" against arrow-go's encoder", sc, today, p)
		if wo.RowGroupRows == 1<<20 && !plainAfterDictionary(p, "trace_id") {
			t.Fatalf("%s: no trace_id chunk fell back from its dictionary to plain", label)
		}
		if duck != nil {
			checkDuckDB(t, duck, label, want, p)
		}
		checkIcebergScan(t, label, ice, sc, want, a, p)
		releaseAll(want)
	}
}

// TestDecoderFallsBack: a bin the parquet-go decoder cannot take correctly (an input without a
// column added since, a row filter, pages too large to decode whole in the budget) is merged on
// arrow-go, and the result says why.
func TestDecoderFallsBack(t *testing.T) {
	_, sc := encSchemas(t)
	r := rand.New(rand.NewPCG(1, 362))
	dir := t.TempDir()
	var inputs []Input
	for i := 0; i < 3; i++ {
		rec := encRecord(r, sc, 500, 1_700_000_000_000_000, i > 0)
		inputs = append(inputs, writeInput(t, dir, sc, rec, 1, 200))
		rec.Release()
	}
	res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "out"), 1),
		RewriteOptions{ForcePath: PathKWay, Decoder: DecoderParquetGo})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decoder != DecoderArrow || !strings.Contains(res.Reason, "another Parquet schema") {
		t.Fatalf("an input without the added column: decoder %q, reason %q; want arrow and why", res.Decoder, res.Reason)
	}
	// A delete task's row filter runs on Arrow rows.
	res, err = Rewrite(context.Background(), localFS, inputs[1:], sc, pathGen(filepath.Join(dir, "filtered"), 0),
		RewriteOptions{ForcePath: PathKWay, Decoder: DecoderParquetGo, DeleteTask: true, RowFilter: &rowfilter.Filter{Predicates: []rowfilter.Predicate{{}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decoder != DecoderArrow || !strings.Contains(res.Reason, "row filter") || len(res.Outputs) != 0 {
		t.Fatalf("a row filter deleting every row: decoder %q, reason %q, %d outputs; want arrow, why, none", res.Decoder, res.Reason, len(res.Outputs))
	}
	// The encoder set to arrow, in the options or as the process default, rolls back every
	// parquet-go encoding: the value path (which encodes with parquet-go) is not taken.
	res, err = Rewrite(context.Background(), localFS, inputs[1:], sc, pathGen(filepath.Join(dir, "arrow-encoder"), 1),
		RewriteOptions{ForcePath: PathKWay, Decoder: DecoderParquetGo, WriterOptions: WriterOptions{Encoder: writer.EncoderArrow}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decoder != DecoderArrow || !strings.Contains(res.Reason, "encoder is set to arrow") {
		t.Fatalf("encoder arrow: decoder %q, reason %q; want arrow and why", res.Decoder, res.Reason)
	}
	writer.SetDefaultEncoder(writer.EncoderArrow)
	res, err = Rewrite(context.Background(), localFS, inputs[1:], sc, pathGen(filepath.Join(dir, "arrow-default"), 1),
		RewriteOptions{ForcePath: PathKWay})
	writer.SetDefaultEncoder(writer.EncoderDefault)
	if err != nil {
		t.Fatal(err)
	}
	if res.Decoder != DecoderArrow || !strings.Contains(res.Reason, "encoder is set to arrow") {
		t.Fatalf("process encoder arrow, decoder by default: decoder %q, reason %q; want arrow and why", res.Decoder, res.Reason)
	}
	// parquet-go decodes a page whole: inputs whose largest pages would not fit a quarter of
	// the budget stay on arrow-go, which streams them.
	inputs = inputs[1:]
	for _, budget := range []int64{64 << 20, 4 << 10} {
		res, err = Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, fmt.Sprint("budget", budget)), 1),
			RewriteOptions{ForcePath: PathKWay, Decoder: DecoderParquetGo, MemoryBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		want := DecoderParquetGo
		if budget < 1<<20 {
			want = DecoderArrow
		}
		if res.Decoder != want || want == DecoderArrow && !strings.Contains(res.Reason, "largest pages") {
			t.Fatalf("budget %d: decoder %q, reason %q; want %s", budget, res.Decoder, res.Reason, want)
		}
	}
}
