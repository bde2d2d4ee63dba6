package merge

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge/chunksum"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/test/testenv"
)

// encIceSchema is the property test's table: every kind of column the events tables have (a
// map, a list, free text, ids past the dictionary limit), and one added last that older inputs
// lack.
func encIceSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "service", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "raw", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "level", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 5, Name: "trace_id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 6, Name: "attributes", Type: &iceberg.MapType{KeyID: 20, KeyType: iceberg.PrimitiveTypes.String,
			ValueID: 21, ValueType: iceberg.PrimitiveTypes.String, ValueRequired: false}},
		iceberg.NestedField{ID: 7, Name: "tags", Type: &iceberg.ListType{ElementID: 22, Element: iceberg.PrimitiveTypes.String, ElementRequired: false}},
		iceberg.NestedField{ID: 8, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 9, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 10, Name: "bytes", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 11, Name: "added", Type: iceberg.PrimitiveTypes.String},
	)
}

// encSchemas is encIceSchema with the ids a catalog gives its fields (it numbers them afresh,
// so the files' ids match), and its Arrow schema.
func encSchemas(t *testing.T) (*iceberg.Schema, *arrow.Schema) {
	t.Helper()
	ice, err := iceberg.AssignFreshSchemaIDs(encIceSchema(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(ice, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return ice, sc
}

// encRecord: n rows from base on, many with identical timestamps, a third of each optional
// value null at every level; raw now and then a very long string; trace ids all distinct (a
// row group of more than about 8,000 rows passes the dictionary limit). withAdded=false
// leaves out the last column.
func encRecord(r *rand.Rand, sc *arrow.Schema, n int, base int64, withAdded bool) arrow.RecordBatch {
	fields := sc.Fields()
	if !withAdded {
		fields = fields[:len(fields)-1]
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	null := func() bool { return r.IntN(3) == 0 }
	ts := base
	for j := 0; j < n; j++ {
		if r.IntN(3) == 0 {
			ts += r.Int64N(5)
		}
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		for f := 1; f < len(fields); f++ {
			fb := b.Field(f)
			if null() && f != 9 { // "bytes" is never null: a column without nulls
				fb.AppendNull()
				continue
			}
			appendEncValue(r, fields[f].Name, fb, j, null)
		}
	}
	return b.NewRecordBatch()
}

func appendEncValue(r *rand.Rand, name string, fb array.Builder, j int, null func() bool) {
	switch name {
	case "service":
		fb.(*array.StringBuilder).Append(services[r.IntN(len(services))])
	case "raw":
		s := fmt.Sprintf("%s row %d %s", words[r.IntN(len(words))], j, words[r.IntN(len(words))])
		if r.IntN(400) == 0 {
			s = strings.Repeat(s, 20_000/len(s)+r.IntN(20_000)) // up to about half a MiB
		}
		fb.(*array.StringBuilder).Append(s)
	case "level":
		fb.(*array.Int32Builder).Append(int32(r.IntN(6)) - 2)
	case "trace_id":
		fb.(*array.StringBuilder).Append(fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()))
	case "attributes":
		mb := fb.(*array.MapBuilder)
		kb, vb := mb.KeyBuilder().(*array.StringBuilder), mb.ItemBuilder().(*array.StringBuilder)
		mb.Append(true)
		for k := 0; k < r.IntN(5); k++ {
			kb.Append(fmt.Sprintf("k%d", (k*7+r.IntN(3))%10)) // entry order is the row's, not sorted
			if null() {
				vb.AppendNull()
			} else {
				vb.Append(fmt.Sprintf("v%d", r.IntN(40)))
			}
		}
	case "tags":
		lb := fb.(*array.ListBuilder)
		eb := lb.ValueBuilder().(*array.StringBuilder)
		lb.Append(true)
		for k := 0; k < r.IntN(4); k++ {
			if null() {
				eb.AppendNull()
			} else {
				eb.Append(fmt.Sprintf("tag%d", r.IntN(20)))
			}
		}
	case "score":
		fb.(*array.Float64Builder).Append(r.NormFloat64() * 100)
	case "ok":
		fb.(*array.BooleanBuilder).Append(r.IntN(2) == 0)
	case "bytes":
		fb.(*array.Int64Builder).Append(r.Int64N(1<<40) - 1<<39)
	case "added":
		fb.(*array.StringBuilder).Append(fmt.Sprintf("added-%d", r.IntN(100)))
	}
}

// encWrite is one write of the property test with one encoder: a merge path or WriteSorted.
func encWrite(t *testing.T, what string, dir string, enc writer.Encoder, inputs []Input, recs []arrow.RecordBatch, sc *arrow.Schema, wo WriterOptions) []Output {
	t.Helper()
	wo.Encoder = enc
	out := filepath.Join(dir, what+"-"+string(enc))
	if what == "sorted" {
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(out, 0), sc, recs, wo)
		if err != nil {
			t.Fatalf("WriteSorted, %s: %v", enc, err)
		}
		return outs
	}
	res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(out, 1),
		RewriteOptions{ForcePath: PathKind(what), ChunkRows: 700, SpliceMinRows: 300, WriterOptions: wo})
	if err != nil {
		t.Fatalf("%s, %s: %v", what, enc, err)
	}
	return res.Outputs
}

// TestEncodersWriteTheSameRows: on random inputs, every merge path and WriteSorted write the same
// rows in the same order into the same files, row groups and search metadata with the parquet-go
// encoder as with arrow-go's (SIGLAKE_MERGE_PARQUET_ENCODER); each file's statistics say the
// same, its page indexes and chunk sums are there, and arrow-go, DuckDB and an iceberg-go table
// scan read the input's rows back from either encoder's files.
func TestEncodersWriteTheSameRows(t *testing.T) {
	duck := testenv.DuckDB(t)
	// The ids a catalog gives the table's fields (it numbers them afresh), so the files' match.
	ice, sc := encSchemas(t)
	seeds := uint64(3)
	if long() {
		seeds = 9
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		r := rand.New(rand.NewPCG(seed, 36))
		dir := t.TempDir()
		// Seeds 1, 4, ...: small row groups in one file; 2, 5, ...: one huge row group, whose
		// trace ids (more rows: over 256 KiB of them) pass the dictionary limit; 3, 6, ...: small
		// files, which are cut where their compressed size says, so the encoders' files differ and
		// only the rows are compared.
		variant := (seed - 1) % 3
		wo := []WriterOptions{{RowGroupRows: 1000}, {RowGroupRows: 1 << 20}, {RowGroupRows: 1000, TargetFileBytes: 300_000}}[variant]
		rows := 2500
		if variant == 1 {
			rows = 6000
		}
		var inputs []Input
		var want []arrow.RecordBatch
		for i := 0; i < 3+r.IntN(2); i++ {
			base := int64(1_700_000_000_000_000) + r.Int64N(3000)
			if i == 0 {
				base -= 10_000_000 // before the others: the splice copies it
			}
			rec := encRecord(r, sc, rows+r.IntN(rows), base, i > 0)
			inputs = append(inputs, writeInput(t, dir, sc, rec, 1, 1000))
			c, err := input.Conform(rec, sc, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, c)
			rec.Release()
		}
		for _, what := range []string{string(PathInMemory), string(PathKWay), string(PathPageBounded), string(PathSplice), "sorted"} {
			label := fmt.Sprintf("seed %d %s", seed, what)
			a := encWrite(t, what, dir, writer.EncoderArrow, inputs, want, sc, wo)
			p := encWrite(t, what, dir, writer.EncoderParquetGo, inputs, want, sc, wo)
			if wo.TargetFileBytes > 0 {
				compareEncoderRows(t, label, sc, a, p)
			} else {
				compareEncoderOutputs(t, label, sc, a, p)
			}
			if wo.RowGroupRows == 1<<20 && (!plainAfterDictionary(a, "trace_id") || !plainAfterDictionary(p, "trace_id")) {
				t.Fatalf("%s: a trace_id chunk did not fall back from its dictionary to plain (arrow-go %v, parquet-go %v)", label,
					plainAfterDictionary(a, "trace_id"), plainAfterDictionary(p, "trace_id"))
			}
			if duck != nil {
				checkDuckDB(t, duck, label, want, p)
			}
			if what == string(PathKWay) || what == "sorted" {
				checkIcebergScan(t, label, ice, sc, want, a, p)
			}
		}
		releaseAll(want)
	}
}

// compareEncoderOutputs: the two encoders' outputs hold the same rows in the same order (read by
// arrow-go), in the same files and row groups, with the same search metadata, statistics and
// valid chunk sums; the parquet-go outputs carry page indexes for every chunk.
func compareEncoderOutputs(t *testing.T, label string, sc *arrow.Schema, a, p []Output) {
	t.Helper()
	if len(a) != len(p) {
		t.Fatalf("%s: %d outputs with arrow-go, %d with parquet-go", label, len(a), len(p))
	}
	for i := range a {
		ao, po := a[i], p[i]
		what := fmt.Sprintf("%s output %d", label, i)
		if ao.Rows != po.Rows || ao.MinTimestamp != po.MinTimestamp || ao.MaxTimestamp != po.MaxTimestamp {
			t.Fatalf("%s: arrow-go %d rows [%d, %d], parquet-go %d rows [%d, %d]", what, ao.Rows, ao.MinTimestamp, ao.MaxTimestamp, po.Rows, po.MinTimestamp, po.MaxTimestamp)
		}
		ar, pr := readFileRows(t, localFS, ao.Path, sc), readFileRows(t, localFS, po.Path, sc)
		if !slices.Equal(ar, pr) {
			for j := range min(len(ar), len(pr)) {
				if ar[j] != pr[j] {
					t.Fatalf("%s: row %d differs:\n arrow-go   %.300s\n parquet-go %.300s", what, j, ar[j], pr[j])
				}
			}
			t.Fatalf("%s: arrow-go read %d rows, parquet-go %d", what, len(ar), len(pr))
		}
		compareFooters(t, what, ao, po)
		checkChunkCRCs(t, what+" arrow-go", ao)
		checkChunkCRCs(t, what+" parquet-go", po)
	}
}

// plainAfterDictionary says whether a chunk of column col in outs has dictionary-encoded and
// plain data pages: its dictionary passed the limit.
func plainAfterDictionary(outs []Output, col string) bool {
	for _, o := range outs {
		c := o.Meta.Schema.ColumnIndexByName(col)
		for rg := 0; c >= 0 && rg < o.Meta.NumRowGroups(); rg++ {
			cc, err := o.Meta.RowGroup(rg).ColumnChunk(c)
			if err != nil {
				continue
			}
			var plain, dict bool
			for _, st := range cc.EncodingStats() {
				if st.PageType == 0 || st.PageType == 3 { // data page v1 or v2
					plain = plain || st.Encoding == parquet.Encodings.Plain
					dict = dict || st.Encoding == parquet.Encodings.RLEDict
				}
			}
			if plain && dict {
				return true
			}
		}
	}
	return false
}

// compareEncoderRows: the two encoders' outputs, which may be cut into files differently, hold
// the same rows in the same order, every chunk with its sum and page indexes.
func compareEncoderRows(t *testing.T, label string, sc *arrow.Schema, a, p []Output) {
	t.Helper()
	var ar, pr []string
	for _, o := range a {
		ar = append(ar, readFileRows(t, localFS, o.Path, sc)...)
		checkChunkCRCs(t, label+" arrow-go", o)
	}
	for _, o := range p {
		pr = append(pr, readFileRows(t, localFS, o.Path, sc)...)
		checkChunkCRCs(t, label+" parquet-go", o)
		for rg := range o.Meta.RowGroups {
			for c := range o.Meta.RowGroups[rg].Columns {
				if cc := o.Meta.RowGroups[rg].Columns[c]; cc.ColumnIndexOffset == nil || cc.OffsetIndexOffset == nil {
					t.Fatalf("%s: %s row group %d column %d: no page indexes", label, o.Path, rg, c)
				}
			}
		}
	}
	if !slices.Equal(ar, pr) {
		t.Fatalf("%s: arrow-go's %d files and parquet-go's %d hold different rows (%d and %d)", label, len(a), len(p), len(ar), len(pr))
	}
}

// compareFooters: same schema, row groups, key-value metadata (chunk sums aside, the bytes
// differ) and per-chunk statistics; page indexes on every parquet-go chunk.
func compareFooters(t *testing.T, what string, ao, po Output) {
	t.Helper()
	am, pm := ao.Meta, po.Meta
	if !am.Schema.Equals(pm.Schema) {
		t.Fatalf("%s: schemas differ", what)
	}
	if am.NumRowGroups() != pm.NumRowGroups() {
		t.Fatalf("%s: %d row groups with arrow-go, %d with parquet-go", what, am.NumRowGroups(), pm.NumRowGroups())
	}
	akv, pkv := am.KeyValueMetadata(), pm.KeyValueMetadata()
	if akv.Len() != pkv.Len() {
		t.Fatalf("%s: footer keys %v, parquet-go %v", what, akv.Keys(), pkv.Keys())
	}
	for i, k := range akv.Keys() {
		if pkv.Keys()[i] != k || (k != chunksum.Key && akv.Values()[i] != pkv.Values()[i]) {
			t.Fatalf("%s: footer entry %d: %s with arrow-go, %s with parquet-go (or its value differs)", what, i, k, pkv.Keys()[i])
		}
	}
	for rg := 0; rg < am.NumRowGroups(); rg++ {
		arg, prg := am.RowGroup(rg), pm.RowGroup(rg)
		if arg.NumRows() != prg.NumRows() {
			t.Fatalf("%s: row group %d: %d rows, parquet-go %d", what, rg, arg.NumRows(), prg.NumRows())
		}
		for c := 0; c < arg.NumColumns(); c++ {
			ac, _ := arg.ColumnChunk(c)
			pc, _ := prg.ColumnChunk(c)
			where := fmt.Sprintf("%s: row group %d column %s", what, rg, am.Schema.Column(c).Path())
			if ac.NumValues() != pc.NumValues() {
				t.Fatalf("%s: %d values, parquet-go %d", where, ac.NumValues(), pc.NumValues())
			}
			if pc.GetColumnIndexLocation() == nil || pc.GetOffsetIndexLocation() == nil {
				t.Fatalf("%s: parquet-go wrote no page indexes", where)
			}
			compareStats(t, where, ac, pc)
		}
	}
}

// compareStats: the chunk statistics say the same: null counts, and min and max (both leave out
// a bound past 4,096 bytes: the long raw lines).
func compareStats(t *testing.T, where string, ac, pc *metadata.ColumnChunkMetaData) {
	t.Helper()
	aset, err1 := ac.StatsSet()
	pset, err2 := pc.StatsSet()
	if err1 != nil || err2 != nil || aset != pset {
		t.Fatalf("%s: statistics set %v (%v) with arrow-go, %v (%v) with parquet-go", where, aset, err1, pset, err2)
	}
	if !aset {
		return
	}
	as, err1 := ac.Statistics()
	ps, err2 := pc.Statistics()
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: statistics: %v, %v", where, err1, err2)
	}
	if as.HasNullCount() != ps.HasNullCount() || as.NullCount() != ps.NullCount() {
		t.Fatalf("%s: null count %d (%v) with arrow-go, %d (%v) with parquet-go", where, as.NullCount(), as.HasNullCount(), ps.NullCount(), ps.HasNullCount())
	}
	if as.HasMinMax() != ps.HasMinMax() || as.HasMinMax() && (!bytes.Equal(as.EncodeMin(), ps.EncodeMin()) || !bytes.Equal(as.EncodeMax(), ps.EncodeMax())) {
		t.Fatalf("%s: min/max %.40q/%.40q with arrow-go, %.40q/%.40q (%v) with parquet-go", where, as.EncodeMin(), as.EncodeMax(), ps.EncodeMin(), ps.EncodeMax(), ps.HasMinMax())
	}
}

// checkDuckDB: DuckDB reads the input's rows from outs.
func checkDuckDB(t *testing.T, duck *testenv.Duck, label string, want []arrow.RecordBatch, outs []Output) {
	t.Helper()
	wantSum, err := testenv.RowChecksum(want)
	if err != nil {
		t.Fatal(err)
	}
	if s := duck.Summarize(paths(outs)); s.Checksum != wantSum || len(s.Files) != len(outs) {
		t.Fatalf("%s: DuckDB read %d of %d parquet-go files, row checksum %d, input rows %d", label, len(s.Files), len(outs), s.Checksum, wantSum)
	}
}

// checkIcebergScan: registered in an iceberg-go table (one per encoder), each encoder's outputs
// get the same Iceberg column statistics, and a table scan returns the input's rows.
func checkIcebergScan(t *testing.T, label string, ice *iceberg.Schema, sc *arrow.Schema, want []arrow.RecordBatch, a, p []Output) {
	t.Helper()
	ctx := context.Background()
	cat, dir := sqliteCatalog(t)
	// iceberg-go's scan does not project maps and lists ("cannot explicitly project list or map
	// types"): the scan reads the other columns.
	var cols []int
	var names []string
	for i, f := range sc.Fields() {
		if k := f.Type.ID(); k != arrow.MAP && k != arrow.LIST {
			cols, names = append(cols, i), append(names, f.Name)
		}
	}
	flat := arrow.NewSchema(slices.Collect(func(yield func(arrow.Field) bool) {
		for _, i := range cols {
			if !yield(sc.Field(i)) {
				return
			}
		}
	}), nil)
	var wantRows []string
	for _, rec := range want {
		arrs := make([]arrow.Array, len(cols))
		for j, i := range cols {
			arrs[j] = rec.Column(i)
		}
		p := array.NewRecordBatch(flat, arrs, rec.NumRows())
		wantRows = append(wantRows, rowStrings(t, p, flat)...)
		p.Release()
	}
	slices.Sort(wantRows)
	var dfs [2][]iceberg.DataFile
	for e, outs := range [][]Output{a, p} {
		tbl, err := cat.CreateTable(ctx, table.Identifier{"ns", fmt.Sprintf("t%d", e)}, ice, catalog.WithLocation("file://"+filepath.Join(dir, "wh", fmt.Sprint(e))))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			df, err := table.DataFileFromMetadata(table.DataFileArgs{
				Schema: tbl.Schema(), Spec: tbl.Spec(), Format: iceberg.ParquetFile, Metadata: o.Meta,
				FilePath: o.Path, FileSize: o.Size, Content: iceberg.EntryContentData, FormatVersion: tbl.Metadata().Version(),
			})
			if err != nil {
				t.Fatal(err)
			}
			dfs[e] = append(dfs[e], df)
		}
		tx := tbl.NewTransaction()
		if err := tx.AddDataFiles(ctx, dfs[e], nil); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		_, it, err := tbl.Scan(table.WithSelectedFields(names...)).ToArrowRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rec, err := range it {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rowStrings(t, rec, flat)...)
			rec.Release()
		}
		slices.Sort(got)
		if !slices.Equal(got, wantRows) {
			t.Fatalf("%s: iceberg-go scan of encoder %d's files returned %d rows, want %d (or different rows)", label, e, len(got), len(wantRows))
		}
	}
	for i := range dfs[0] {
		ad, pd := dfs[0][i], dfs[1][i]
		if fmt.Sprint(ad.ValueCounts(), ad.NullValueCounts(), ad.LowerBoundValues(), ad.UpperBoundValues()) !=
			fmt.Sprint(pd.ValueCounts(), pd.NullValueCounts(), pd.LowerBoundValues(), pd.UpperBoundValues()) {
			t.Fatalf("%s: file %d: Iceberg statistics differ:\n arrow-go   %v %v %v %v\n parquet-go %v %v %v %v", label, i,
				ad.ValueCounts(), ad.NullValueCounts(), ad.LowerBoundValues(), ad.UpperBoundValues(),
				pd.ValueCounts(), pd.NullValueCounts(), pd.LowerBoundValues(), pd.UpperBoundValues())
		}
	}
}

// TestSortedRunsSameRowsBothEncoders: records that are mostly in time order, as a WAL's are,
// sort into long runs, which the sorted write hands parquet-go as slices of the records
// (writer.Sink.WriteParts) and arrow-go as one copied record: the files, row groups, search
// metadata and statistics are the same, and DuckDB reads the rows back.
func TestSortedRunsSameRowsBothEncoders(t *testing.T) {
	duck := testenv.DuckDB(t)
	_, sc := encSchemas(t)
	for seed := uint64(1); seed <= 3; seed++ {
		r := rand.New(rand.NewPCG(seed, 361))
		var want []arrow.RecordBatch
		base := int64(1_700_000_000_000_000)
		for i := 0; i < 6; i++ {
			// About 2,700 to 3,300 µs a record, the next starting 3,200 µs on: a record's tail
			// may interleave with the next one's head, the rest are long runs.
			rec := encRecord(r, sc, 4000+r.IntN(1000), base, true)
			base += 3200
			c, err := input.Conform(rec, sc, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, c)
			rec.Release()
		}
		wo := WriterOptions{RowGroupRows: 700 + int64(r.IntN(600))}
		dir := t.TempDir()
		label := fmt.Sprintf("seed %d", seed)
		a := encWrite(t, "sorted", dir, writer.EncoderArrow, nil, want, sc, wo)
		p := encWrite(t, "sorted", dir, writer.EncoderParquetGo, nil, want, sc, wo)
		compareEncoderOutputs(t, label, sc, a, p)
		if duck != nil {
			checkDuckDB(t, duck, label, want, p)
		}
		releaseAll(want)
	}
}
