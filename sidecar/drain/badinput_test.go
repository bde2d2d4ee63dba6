package drain

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/sidecar/drain/metrics"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// Bad input through the real drain (DESIGN.md promise 8): every malformed segment is moved to
// <wal>/quarantine/ byte for byte with a reason file, counted by reason and logged, and the good
// segments around it in the same batch are committed exactly once.

// sealedRun is what writeEach sealed: one segment per entry, in seq order, with its rows' fingerprint.
type sealedRun struct {
	incarnation uint64
	segs        []walwriter.SealedSegment
	sums        []RowSum
	recs        []arrow.RecordBatch // the rows of each segment (kept for crafting bad copies)
}

// writeEach seals n segments of rows generated rows each, one segment per Append, and keeps each
// segment's rows.
func (e *env) writeEach(n, rows int, seed uint64, start time.Time) *sealedRun {
	e.t.Helper()
	run := &sealedRun{}
	w, err := walwriter.New(e.cfg.WALDir, walwriter.Options{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour,
		OnSeal: func(s walwriter.SealedSegment) { run.segs = append(run.segs, s) }})
	if err != nil {
		e.t.Fatal(err)
	}
	run.incarnation = w.Incarnation()
	g := walgen.New(walgen.Options{Seed: seed, LateFraction: 0.05, MaxLateness: time.Minute})
	for i := 0; i < n; i++ {
		rec := g.Batch(memory.DefaultAllocator, start.Add(time.Duration(i*rows)*time.Millisecond), rows, time.Millisecond)
		var sum RowSum
		if err := sum.Add(rec, eventColumns...); err != nil {
			e.t.Fatal(err)
		}
		run.sums, run.recs = append(run.sums, sum), append(run.recs, rec)
		if err := w.Append("events", rec); err != nil {
			e.t.Fatal(err)
		}
		if err := w.SealDue(time.Now().Add(2 * time.Hour)); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		for _, r := range run.recs {
			r.Release()
		}
	})
	if len(run.segs) != n {
		e.t.Fatalf("sealed %d segments, want %d", len(run.segs), n)
	}
	return run
}

// header is the segment header of slot i of the run (what a crafted replacement must carry so
// that its name and header agree and the reader looks past them).
func (r *sealedRun) header(i int) localwal.Header {
	return localwal.Header{Table: "events", Stream: "pod-0", Incarnation: r.incarnation, Seq: r.segs[i].Seq, Created: time.Now()}
}

// writeStream writes a version 2 segment (an Arrow IPC stream and its checksum trailer) with header hdr and the given columns (nil cols: a
// stream with a schema and no record batch).
func writeStream(t *testing.T, path string, hdr localwal.Header, fields []arrow.Field, cols []arrow.Array, rows int64) {
	t.Helper()
	md := hdr.Metadata()
	sc := arrow.NewSchema(fields, &md)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sc))
	if cols != nil {
		rec := array.NewRecordBatch(sc, cols, rows)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, localwal.AppendChecksum(buf.Bytes()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replaceColumn returns rec's fields and columns with column name replaced by (typ, arr), or
// dropped when arr is nil.
func replaceColumn(rec arrow.RecordBatch, name string, typ arrow.DataType, arr arrow.Array) ([]arrow.Field, []arrow.Array) {
	var fields []arrow.Field
	var cols []arrow.Array
	for i, f := range rec.Schema().Fields() {
		if f.Name == name {
			if arr == nil {
				continue
			}
			f.Type = typ
			cols = append(cols, arr)
		} else {
			cols = append(cols, rec.Column(i))
		}
		fields = append(fields, f)
	}
	return fields, cols
}

// quarantinedByReason reads siglake_wal_quarantined_segments_total{reason}.
func quarantinedByReason(t *testing.T, m *metrics.Metrics, reason string) float64 {
	t.Helper()
	fams, err := registryOf(m).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "siglake_wal_quarantined_segments_total" {
			continue
		}
		for _, mm := range f.GetMetric() {
			if hasLabel(mm, "reason", reason) {
				return mm.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// badCase turns the middle segment of five into bad input. It returns the path the bad segment
// has in the WAL dir (a rename changes it).
type badCase struct {
	name   string
	reason string
	mutate func(t *testing.T, run *sealedRun, i int) string
	// first: the bad segment is the first of the batch, so it is the one that would create the table.
	first bool
}

func badCases() []badCase {
	rewrite := func(f func(data []byte) []byte) func(t *testing.T, run *sealedRun, i int) string {
		return func(t *testing.T, run *sealedRun, i int) string {
			p := run.segs[i].Path
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f(data), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	mem := memory.DefaultAllocator
	return []badCase{
		{"truncated", localwal.ReasonTruncated, rewrite(func(d []byte) []byte { return d[:len(d)/2] }), false},
		{"truncated_eos_missing", localwal.ReasonTruncated, rewrite(func(d []byte) []byte { return d[:len(d)-8] }), false},
		{"random_bytes", localwal.ReasonCorrupt, rewrite(func(d []byte) []byte {
			rng := rand.New(rand.NewPCG(7, 7))
			out := make([]byte, len(d))
			for i := range out {
				out[i] = byte(rng.UintN(256))
			}
			return out
		}), false},
		{"zero_byte", localwal.ReasonEmpty, rewrite(func([]byte) []byte { return nil }), false},
		{"zero_row_stream", localwal.ReasonEmpty, func(t *testing.T, run *sealedRun, i int) string {
			writeStream(t, run.segs[i].Path, run.header(i), walgen.EventsSchema.Fields(), nil, 0)
			return run.segs[i].Path
		}, false},
		{"zero_row_batch", localwal.ReasonEmpty, func(t *testing.T, run *sealedRun, i int) string {
			empty := run.recs[i].NewSlice(0, 0)
			defer empty.Release()
			writeStream(t, run.segs[i].Path, run.header(i), walgen.EventsSchema.Fields(), empty.Columns(), 0)
			return run.segs[i].Path
		}, false},
		{"no_timestamp_column", localwal.ReasonBadSchema, func(t *testing.T, run *sealedRun, i int) string {
			fields, cols := replaceColumn(run.recs[i], lake.TimestampColumn, nil, nil)
			writeStream(t, run.segs[i].Path, run.header(i), fields, cols, run.recs[i].NumRows())
			return run.segs[i].Path
		}, false},
		{"timestamp_as_string", localwal.ReasonBadSchema, func(t *testing.T, run *sealedRun, i int) string {
			b := array.NewStringBuilder(mem)
			for r := 0; r < int(run.recs[i].NumRows()); r++ {
				b.Append("2026-11-29T00:00:00Z")
			}
			arr := b.NewArray()
			defer arr.Release()
			fields, cols := replaceColumn(run.recs[i], lake.TimestampColumn, arrow.BinaryTypes.String, arr)
			writeStream(t, run.segs[i].Path, run.header(i), fields, cols, run.recs[i].NumRows())
			return run.segs[i].Path
		}, false},
		{"service_as_int64", "incompatible_schema", func(t *testing.T, run *sealedRun, i int) string {
			b := array.NewInt64Builder(mem)
			for r := 0; r < int(run.recs[i].NumRows()); r++ {
				b.Append(int64(r))
			}
			arr := b.NewArray()
			defer arr.Release()
			fields, cols := replaceColumn(run.recs[i], "service", arrow.PrimitiveTypes.Int64, arr)
			writeStream(t, run.segs[i].Path, run.header(i), fields, cols, run.recs[i].NumRows())
			return run.segs[i].Path
		}, false},
		{name: "new_column_uint64", reason: "incompatible_schema", mutate: func(t *testing.T, run *sealedRun, i int) string {
			// Iceberg maps uint64 to long, which the Parquet writer cannot take from uint64 losslessly.
			b := array.NewUint64Builder(mem)
			for r := 0; r < int(run.recs[i].NumRows()); r++ {
				b.Append(uint64(r) << 40)
			}
			arr := b.NewArray()
			defer arr.Release()
			fields := append(append([]arrow.Field(nil), run.recs[i].Schema().Fields()...), arrow.Field{Name: "bytes_sent", Type: arrow.PrimitiveTypes.Uint64, Nullable: true})
			writeStream(t, run.segs[i].Path, run.header(i), fields, append(append([]arrow.Array(nil), run.recs[i].Columns()...), arr), run.recs[i].NumRows())
			return run.segs[i].Path
		}},
		{name: "null_timestamps", reason: "incompatible_schema", mutate: func(t *testing.T, run *sealedRun, i int) string {
			b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})
			ts := run.recs[i].Column(0).(*array.Timestamp)
			for r := 0; r < ts.Len(); r++ {
				if r%7 == 3 {
					b.AppendNull()
				} else {
					b.Append(ts.Value(r))
				}
			}
			arr := b.NewArray()
			defer arr.Release()
			fields, cols := replaceColumn(run.recs[i], lake.TimestampColumn, arr.DataType(), arr)
			fields[0].Nullable = true
			writeStream(t, run.segs[i].Path, run.header(i), fields, cols, run.recs[i].NumRows())
			return run.segs[i].Path
		}},
		{name: "first_segment_unsupported_type", reason: "incompatible_schema", first: true, mutate: func(t *testing.T, run *sealedRun, i int) string {
			// The table does not exist yet: this segment would create it, with a type Iceberg lacks.
			b := array.NewDurationBuilder(mem, &arrow.DurationType{Unit: arrow.Millisecond})
			for r := 0; r < int(run.recs[i].NumRows()); r++ {
				b.Append(arrow.Duration(r))
			}
			arr := b.NewArray()
			defer arr.Release()
			fields := append(append([]arrow.Field(nil), run.recs[i].Schema().Fields()...), arrow.Field{Name: "latency", Type: arr.DataType(), Nullable: true})
			writeStream(t, run.segs[i].Path, run.header(i), fields, append(append([]arrow.Array(nil), run.recs[i].Columns()...), arr), run.recs[i].NumRows())
			return run.segs[i].Path
		}},
		{"string_offsets_inside_runes", localwal.ReasonCorrupt, func(t *testing.T, run *sealedRun, i int) string {
			// The values buffer from the first offset to the last is valid UTF-8 (whole é's), but
			// every offset cuts an é in two, so every value is invalid: the per-buffer check must
			// still reject the batch.
			n := int(run.recs[i].NumRows()) &^ 1
			offs := make([]int32, n+1)
			for r := range offs {
				offs[r] = int32(r)
			}
			data := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil,
				memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs)), memory.NewBufferBytes([]byte(strings.Repeat("é", n)))}, nil, 0, 0)
			defer data.Release()
			arr := array.MakeFromData(data)
			defer arr.Release()
			rec := run.recs[i].NewSlice(0, int64(n))
			defer rec.Release()
			fields, cols := replaceColumn(rec, "service", arrow.BinaryTypes.String, arr)
			writeStream(t, run.segs[i].Path, run.header(i), fields, cols, int64(n))
			return run.segs[i].Path
		}, false},
		{"flipped_bit_in_string", localwal.ReasonChecksum, rewrite(func(d []byte) []byte {
			// A host value (ip-10-0-...) in the batch's values buffer: flipping bit 5 of its 'i'
			// makes it 'I', still valid UTF-8, so only the checksum can tell.
			out := bytes.Clone(d)
			out[bytes.LastIndex(out, []byte("ip-10-0-"))] ^= 0x20
			return out
		}), false},
		{"oversize", localwal.ReasonOversize, func(t *testing.T, run *sealedRun, i int) string {
			// Sparse: the good bytes followed by zeros up to one byte past the limit.
			if err := os.Truncate(run.segs[i].Path, testMaxSegment+1); err != nil {
				t.Fatal(err)
			}
			return run.segs[i].Path
		}, false},
		{"bad_table_name", localwal.ReasonBadTableName, func(t *testing.T, run *sealedRun, i int) string {
			s := run.segs[i]
			p := filepath.Join(filepath.Dir(s.Path), strings.Replace(s.Name, "events.", "Events-Prod.", 1))
			if err := os.Rename(s.Path, p); err != nil {
				t.Fatal(err)
			}
			return p
		}, false},
	}
}

// TestBadSegmentQuarantinedOthersDrained puts each kind of bad segment in the middle of a batch
// of five and checks containment: quarantined byte for byte with a reason file, counted, logged,
// and the four good segments committed exactly once with the stream mark past all of them.
func TestBadSegmentQuarantinedOthersDrained(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, c := range badCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()        // independent catalogs; overlaps their fsyncs
			e := newEnv(t, nil) // default batching: the five segments form one batch
			core, logs := observer.New(zap.InfoLevel)
			e.drain.Log = zap.New(core)
			run := e.writeEach(5, 1000, 11, start)
			bad := 2
			if c.first {
				bad = 0
			}
			badPath := c.mutate(t, run, bad)
			badBytes, err := os.ReadFile(badPath)
			if err != nil {
				t.Fatal(err)
			}
			var want RowSum
			for i, s := range run.sums {
				if i != bad {
					want.Merge(s)
				}
			}

			res, err := e.drain.Cycle(context.Background(), true)
			if err != nil {
				t.Fatalf("cycle: %v", err)
			}
			if res.Pending != 0 || res.Segments != 4 || res.Rows != int64(want.Rows) {
				t.Fatalf("cycle %+v, want the 4 good segments (%d rows) drained and nothing pending", res, want.Rows)
			}
			if got := e.tableSum("events"); got != want {
				t.Fatalf("table holds %+v, want the good segments' %+v", got, want)
			}
			tbl, err := e.lake.LoadTable(context.Background(), "events")
			if err != nil {
				t.Fatal(err)
			}
			if m, ok, err := marks.ReadMark(tbl, "pod-0"); err != nil || !ok || m.Seq != run.segs[4].Seq {
				t.Fatalf("stream mark %v %v %v, want seq %d", m, ok, err, run.segs[4].Seq)
			}

			// Quarantined unchanged, with its reason.
			name := filepath.Base(badPath)
			qpath := filepath.Join(e.cfg.WALDir, localwal.QuarantineDir, name)
			got, err := os.ReadFile(qpath)
			if err != nil {
				t.Fatalf("bad segment not in quarantine: %v", err)
			}
			if !bytes.Equal(got, badBytes) {
				t.Fatalf("quarantined file has %d bytes, differs from the %d bytes that were in the WAL", len(got), len(badBytes))
			}
			if _, err := os.Stat(badPath); !os.IsNotExist(err) {
				t.Fatalf("bad segment still in the WAL dir: %v", err)
			}
			var rf localwal.ReasonFile
			raw, err := os.ReadFile(qpath + localwal.ReasonSuffix)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &rf); err != nil {
				t.Fatalf("reason file %s: %v", raw, err)
			}
			if rf.Reason != c.reason || rf.Segment != name || rf.Detail == "" {
				t.Fatalf("reason file %+v, want reason %s for %s with a detail", rf, c.reason, name)
			}

			// Counted under its reason, and only there.
			if v := quarantinedByReason(t, e.drain.Metrics, c.reason); v != 1 {
				t.Fatalf("siglake_wal_quarantined_segments_total{reason=%q} = %v, want 1", c.reason, v)
			}
			if v := counterValue(t, e.drain.Metrics, "siglake_wal_quarantined_segments_total", ""); v != 1 {
				t.Fatalf("quarantine counter total %v, want 1", v)
			}

			// Logged with the path, destination and reason.
			entries := logs.FilterMessage("quarantined bad segment").All()
			if len(entries) != 1 {
				t.Fatalf("%d quarantine log lines, want 1", len(entries))
			}
			f := entries[0].ContextMap()
			if f["path"] != badPath || f["quarantined_to"] != qpath || f["reason"] != c.reason || f["cause"] == nil {
				t.Fatalf("quarantine log fields %v", f)
			}

			// The next cycle finds nothing to do and leaves the table alone.
			if res, err := e.drain.Cycle(context.Background(), true); err != nil || res.Batches != 0 {
				t.Fatalf("second cycle %+v %v", res, err)
			}
			if got := e.tableSum("events"); got != want {
				t.Fatalf("after the second cycle the table holds %+v, want %+v", got, want)
			}
		})
	}
}

// TestManyBadSegmentsOneBatch mixes every kind of bad segment into one batch with good ones in
// between, so quarantines follow each other and the good rows still commit once.
func TestManyBadSegmentsOneBatch(t *testing.T) {
	cases := badCases()
	e := newEnv(t, nil)
	run := e.writeEach(2*len(cases)+1, 500, 21, time.Date(2026, 11, 28, 23, 59, 50, 0, time.UTC))
	var want RowSum
	wantReasons := map[string]float64{}
	for i := range run.segs {
		if i%2 == 1 {
			c := cases[i/2]
			c.mutate(t, run, i)
			wantReasons[c.reason]++
			continue
		}
		want.Merge(run.sums[i])
	}
	res, err := e.drain.Cycle(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pending != 0 || res.Rows != int64(want.Rows) {
		t.Fatalf("cycle %+v, want %d rows drained and nothing pending", res, want.Rows)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v", got, want)
	}
	for reason, n := range wantReasons {
		if v := quarantinedByReason(t, e.drain.Metrics, reason); v != n {
			t.Errorf("quarantined{reason=%q} = %v, want %v", reason, v, n)
		}
	}
	ents, err := os.ReadDir(filepath.Join(e.cfg.WALDir, localwal.QuarantineDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2*len(cases) {
		t.Fatalf("quarantine holds %d files, want %d segments and their reason files", len(ents), 2*len(cases))
	}
}

// TestNewOptionalColumnAddedAsNull: a later segment with a new column widens the table; rows
// committed before read that column as null (in a later batch, and within one batch).
func TestNewOptionalColumnAddedAsNull(t *testing.T) {
	columns := append(append([]string(nil), eventColumns...), "tenant")
	for _, sameBatch := range []bool{false, true} {
		name := "later_batch"
		if sameBatch {
			name = "same_batch"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			run := e.writeEach(3, 1000, 31, time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC))
			var want RowSum
			for _, s := range run.sums {
				want.Merge(s)
			}
			if !sameBatch {
				if _, err := e.drain.Cycle(context.Background(), true); err != nil {
					t.Fatal(err)
				}
			}
			// Slot 3 and on: the same rows plus a tenant column, written by the real writer.
			wide := writeTenantSegment(t, e, 32, time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
			// want was summed over the event columns; with "tenant" added, earlier rows count it as null.
			want = RowSum{}
			for _, r := range run.recs {
				withTenant := withNullColumn(r, "tenant", arrow.BinaryTypes.String)
				if err := want.Add(withTenant, columns...); err != nil {
					t.Fatal(err)
				}
				withTenant.Release()
			}
			want.Add(wide, columns...)
			wide.Release()

			res, err := e.drain.Cycle(context.Background(), true)
			if err != nil {
				t.Fatal(err)
			}
			if res.Pending != 0 {
				t.Fatalf("cycle %+v left segments", res)
			}
			if v := counterValue(t, e.drain.Metrics, "siglake_wal_quarantined_segments_total", ""); v != 0 {
				t.Fatalf("a new optional column quarantined %v segments", v)
			}
			tbl, err := e.lake.LoadTable(context.Background(), "events")
			if err != nil {
				t.Fatal(err)
			}
			f, ok := tbl.Schema().FindFieldByName("tenant")
			if !ok || f.Required || f.Type.String() != "string" {
				t.Fatalf("table schema %v: want an optional string column tenant", tbl.Schema())
			}
			got, err := rowsum.Table(context.Background(), tbl, columns...)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("table holds %+v over %v, want %+v (earlier rows with tenant null)", got, columns, want)
			}
			// And the earlier rows really are null, not some default.
			nulls, err := countNulls(tbl, "tenant")
			if err != nil {
				t.Fatal(err)
			}
			if nulls != 3*1000+100 {
				t.Fatalf("%d rows read tenant as null, want the 3000 earlier rows plus the 100 null tenants", nulls)
			}
		})
	}
}

// countNulls counts the rows of t's current snapshot whose column is null (read through
// iceberg-go's scanner).
func countNulls(t *table.Table, column string) (int64, error) {
	_, recs, err := t.Scan().ToArrowRecords(context.Background())
	if err != nil {
		return 0, err
	}
	var n int64
	for rec, err := range recs {
		if err != nil {
			return 0, err
		}
		idx := rec.Schema().FieldIndices(column)
		if len(idx) == 0 {
			n += rec.NumRows()
		} else {
			n += int64(rec.Column(idx[0]).NullN())
		}
		rec.Release()
	}
	return n, nil
}

// TestQuarantineDirUnusable: when the bad segment cannot be moved (quarantine/ is a file), it stays
// in place unchanged, is logged, is not counted as quarantined, and does not hold back the good
// segments; once quarantine/ is usable the next cycle moves it and counts it once.
func TestQuarantineDirUnusable(t *testing.T) {
	e := newEnv(t, nil)
	core, logs := observer.New(zap.InfoLevel)
	e.drain.Log = zap.New(core)
	run := e.writeEach(3, 1000, 41, time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC))
	bad := run.segs[1]
	data, err := os.ReadFile(bad.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad.Path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	qdir := filepath.Join(e.cfg.WALDir, localwal.QuarantineDir)
	if err := os.WriteFile(qdir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := run.sums[0]
	want.Merge(run.sums[2])
	for cycle := 0; cycle < 2; cycle++ {
		res, err := e.drain.Cycle(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		if res.Pending != 1 {
			t.Fatalf("cycle %d: %+v, want the bad segment left pending", cycle, res)
		}
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, want the good segments' %+v", got, want)
	}
	if got, err := os.ReadFile(bad.Path); err != nil || !bytes.Equal(got, data[:len(data)/2]) {
		t.Fatalf("the bad segment changed or went away although it could not be quarantined (%v)", err)
	}
	if v := counterValue(t, e.drain.Metrics, "siglake_wal_quarantined_segments_total", ""); v != 0 {
		t.Fatalf("quarantine counter %v although nothing was moved", v)
	}
	if n := logs.FilterMessage("could not quarantine bad segment; it stays in place").Len(); n != 2 {
		t.Fatalf("%d log lines about the failed quarantine, want one per cycle (2)", n)
	}

	if err := os.Remove(qdir); err != nil {
		t.Fatal(err)
	}
	if res, err := e.drain.Cycle(context.Background(), true); err != nil || res.Pending != 0 {
		t.Fatalf("cycle after the fix: %+v %v", res, err)
	}
	if v := quarantinedByReason(t, e.drain.Metrics, localwal.ReasonTruncated); v != 1 {
		t.Fatalf("quarantined{reason=truncated} = %v, want 1", v)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v", got, want)
	}
}

// withNullColumn is rec with one more column of type typ, all null: how a reader of the table
// sees rows written before the column was added.
func withNullColumn(rec arrow.RecordBatch, name string, typ arrow.DataType) arrow.RecordBatch {
	col := array.MakeArrayOfNull(memory.DefaultAllocator, typ, int(rec.NumRows()))
	defer col.Release()
	return withColumn(rec, arrow.Field{Name: name, Type: typ, Nullable: true}, col)
}

// withColumn is rec with one more column, f holding arr.
func withColumn(rec arrow.RecordBatch, f arrow.Field, arr arrow.Array) arrow.RecordBatch {
	fields := append(append([]arrow.Field(nil), rec.Schema().Fields()...), f)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), append(append([]arrow.Array(nil), rec.Columns()...), arr), rec.NumRows())
}

// writeTenantSegment seals one segment of 1,000 generated rows plus a string column tenant (every
// tenth null) and returns its rows (the caller releases them).
func writeTenantSegment(t *testing.T, e *env, seed uint64, start time.Time) arrow.RecordBatch {
	t.Helper()
	w, err := walwriter.New(e.cfg.WALDir, walwriter.Options{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rec := walgen.New(walgen.Options{Seed: seed}).Batch(memory.DefaultAllocator, start, 1000, time.Millisecond)
	defer rec.Release()
	tb := array.NewStringBuilder(memory.DefaultAllocator)
	for r := 0; r < 1000; r++ {
		if r%10 == 0 {
			tb.AppendNull()
		} else {
			tb.Append([]string{"acme", "globex", "initech"}[r%3])
		}
	}
	tenant := tb.NewArray()
	defer tenant.Release()
	wide := withColumn(rec, arrow.Field{Name: "tenant", Type: arrow.BinaryTypes.String, Nullable: true}, tenant)
	if err := w.Append("events", wide); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return wide
}
