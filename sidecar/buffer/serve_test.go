package buffer

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/walgen"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// TestRowsAndFiltersMatchTheSegments: the buffer serves exactly the rows of the sealed,
// uncommitted segments (written by localwal's writer and by walgen's load generator), and each
// filter keeps exactly the rows the test's own evaluation of the condition keeps.
func TestRowsAndFiltersMatchTheSegments(t *testing.T) {
	h := newHarness(t, nil)
	committed := gen(t, 1, 2, 300, t0.Add(-time.Hour))
	h.e.Seal("events", committed...)
	h.e.DrainAll() // in the lake: never in the buffer's answer above the table's marks
	recs := gen(t, 2, 3, 400, t0)
	h.e.Seal("events", recs...)
	// walgen's own run, as `siglake walgen` writes, into the same stream.
	var mu sync.Mutex
	if _, err := walgen.Run(context.Background(), walgen.RunOptions{WALDir: h.e.WAL, Stream: "pod-0", Rows: 900, BatchRows: 300,
		SegmentSize: 1, Start: t0.Add(time.Minute), Gen: walgen.Options{Seed: 3}}, func(_ string, rec arrow.RecordBatch) {
		mu.Lock()
		rec.Retain()
		recs = append(recs, rec)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range recs[3:] {
			r.Release()
		}
	})
	// The segments' own schema (microseconds UTC) is what a reader compares; the buffer answers
	// in the table's schema, which fingerprints the same.
	cases := []struct {
		name    string
		filter  rows.Filter
		columns []string
	}{
		{name: "every row"},
		{name: "where", filter: rows.Filter{Where: []rows.Condition{{Column: "service", Values: []string{"checkout"}}}}},
		{name: "in and where", filter: rows.Filter{Where: []rows.Condition{
			{Column: "severity", Values: []string{"error", "fatal"}}, {Column: "host", Values: []string{"ip-10-0-0-1", "ip-10-0-0-7", "ip-10-0-0-12"}}}}},
		{name: "time range", filter: rows.Filter{From: t0.Add(200 * time.Millisecond).Format(time.RFC3339Nano), To: t0.Add(time.Minute + 100*time.Millisecond).Format(time.RFC3339Nano)}},
		{name: "range and where", filter: rows.Filter{From: t0.Format(time.RFC3339), Where: []rows.Condition{{Column: "severity", Values: []string{"warn"}}}}},
		{name: "projection", columns: []string{"raw", "timestamp"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cols := c.columns
			if cols == nil {
				cols = walgen.Columns
			}
			want := sumOf(t, recs, c.filter, cols...)
			if want.Rows == 0 {
				t.Fatal("the case selects no row: it tests nothing")
			}
			got, ans, err := h.read(reader.Query{Filter: c.filter, Columns: c.columns}, cols...)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("buffer rows %+v, want %+v", got, want)
			}
			if !ans.Verified || ans.Marks.Get("pod-0") == (marks.Mark{}) || len(ans.Segments) != 6 {
				t.Fatalf("answer %+v", ans)
			}
		})
	}
	// Passing the table's marks is the same as passing none; the lake plus the buffer is every row.
	marks, err := reader.TableMarks(h.table())
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := h.read(reader.Query{After: marks}, walgen.Columns...)
	if err != nil {
		t.Fatal(err)
	}
	lakeSum := h.e.Sum("events")
	got.Merge(lakeSum)
	all := sumOf(t, append(append([]arrow.RecordBatch{}, committed...), recs...), rows.Filter{}, walgen.Columns...)
	if got != all {
		t.Fatalf("lake + buffer %+v, want %+v", got, all)
	}
}

// TestOpenAndQuarantinedNeverServed: an .open segment (still being written), a quarantined one
// and corrupt sealed ones (which the drain will quarantine) contribute no row.
func TestOpenAndQuarantinedNeverServed(t *testing.T) {
	h := newHarness(t, nil)
	good := gen(t, 4, 2, 200, t0)
	h.e.Seal("events", good[0])
	// A sealed segment truncated after its seal (served after the first: left out mid-answer).
	h.e.Seal("events", gen(t, 5, 1, 200, t0)...)
	segs, _ := localwal.Scan(h.e.WAL)
	data, _ := os.ReadFile(segs[1].Path)
	if err := os.WriteFile(segs[1].Path, data[:len(data)-20], 0o644); err != nil {
		t.Fatal(err)
	}
	// A segment whose header contradicts its name.
	first, _ := os.ReadFile(segs[0].Path)
	if err := os.WriteFile(filepath.Join(h.e.WAL, localwal.SegmentName("events", segs[0].Incarnation, segs[1].Seq+100)), first, 0o644); err != nil {
		t.Fatal(err)
	}
	// A sealed segment in quarantine.
	q := filepath.Join(h.e.WAL, localwal.QuarantineDir)
	if err := os.MkdirAll(q, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(q, localwal.SegmentName("events", segs[0].Incarnation, segs[1].Seq+50)), first, 0o644); err != nil {
		t.Fatal(err)
	}
	// A segment still being written.
	w, err := walwriter.New(h.e.WAL, walwriter.Options{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append("events", good[1]); err != nil {
		t.Fatal(err)
	}
	if open, _ := filepath.Glob(filepath.Join(h.e.WAL, "*.open")); len(open) != 1 {
		t.Fatalf("open segments %v", open)
	}
	got, ans, err := h.read(reader.Query{}, walgen.Columns...)
	if err != nil {
		t.Fatal(err)
	}
	if want := sumOf(t, good[:1], rows.Filter{}, walgen.Columns...); got != want {
		t.Fatalf("rows %+v, want only the sealed good segment's %+v", got, want)
	}
	if len(ans.Segments) != 2 { // the truncated one is listed, found bad mid-answer, and left out
		t.Fatalf("segments served %v", ans.Segments)
	}
	m := h.srv.Metrics
	if testutil.ToFloat64(m.Skipped.WithLabelValues(localwal.ReasonTruncated)) != 1 || testutil.ToFloat64(m.Skipped.WithLabelValues(localwal.ReasonCorrupt)) != 1 {
		t.Fatalf("skipped: truncated %v, corrupt %v", testutil.ToFloat64(m.Skipped.WithLabelValues(localwal.ReasonTruncated)), testutil.ToFloat64(m.Skipped.WithLabelValues(localwal.ReasonCorrupt)))
	}
	// Sealing the open one serves it next time.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err = h.read(reader.Query{}, walgen.Columns...)
	if err != nil {
		t.Fatal(err)
	}
	if want := sumOf(t, good, rows.Filter{}, walgen.Columns...); got != want {
		t.Fatalf("rows %+v after sealing, want %+v", got, want)
	}
}

// TestMalformedRequestsName400Parameter: every malformed request gets 400 with the parameter.
func TestMalformedRequestsName400Parameter(t *testing.T) {
	h := newHarness(t, nil)
	h.e.Seal("events", gen(t, 6, 1, 100, t0)...)
	cases := []struct{ path, param string }{
		{"/v1/buffer/events?where=service", "where"},
		{"/v1/buffer/events?in=service=", "in"},
		{"/v1/buffer/events?where=nosuch=1", "where"},
		{"/v1/buffer/events?where=timestamp=1", "where"},
		{"/v1/buffer/events?where=attributes=x", "where"},
		{"/v1/buffer/events?from=yesterday", "from"},
		{"/v1/buffer/events?to=2026-13-01", "to"},
		{"/v1/buffer/events?from=2026-11-30T12:00:00.0000001Z", "from"},
		{"/v1/buffer/events?from=2026-11-30&to=2026-11-29", "to"},
		{"/v1/buffer/events?columns=raw,nosuch", "columns"},
		{"/v1/buffer/events?columns=raw,raw", "columns"},
		{"/v1/buffer/events?after=pod-0", "after"},
		{"/v1/buffer/events?after=pod-0:1:x", "after"},
		{"/v1/buffer/events?after=a:1:1&after=a:1:2", "after"},
		{"/v1/buffer/events?unverified=maybe", "unverified"},
		{"/v1/buffer/events?form=2026-11-30", "form"},
		{"/v1/buffer/Events", "table"},
	}
	for _, c := range cases {
		code, body, _ := h.get(c.path)
		if code != http.StatusBadRequest || body.Parameter != c.param || body.Error == "" {
			t.Errorf("GET %s: %d %+v, want 400 naming %s", c.path, code, body, c.param)
		}
	}
	if code, body, _ := h.get("/v1/buffer/nosuch"); code != http.StatusNotFound {
		t.Errorf("unknown table: %d %+v, want 404", code, body)
	}
	if n := testutil.ToFloat64(h.srv.Metrics.Requests.WithLabelValues("400")); n != float64(len(cases)) {
		t.Errorf("requests{code=400} = %v, want %d", n, len(cases))
	}
	resp, err := http.Post(h.http.URL+"/v1/buffer/events", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// TestLimits: one reader too many gets 429, a segment beyond a read's memory share 413, and an
// answer beyond the segment limit comes in pages that together hold every row.
func TestLimits(t *testing.T) {
	t.Run("429", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MaxReaders = 1 })
		h.e.Seal("events", gen(t, 7, 1, 100, t0)...)
		entered, release := make(chan struct{}), make(chan struct{})
		load := h.srv.LoadTable
		h.srv.LoadTable = func(ctx context.Context, name string) (*table.Table, error) {
			close(entered)
			<-release
			return load(ctx, name)
		}
		done := make(chan error, 1)
		go func() {
			_, _, err := h.read(reader.Query{})
			done <- err
		}()
		<-entered
		code, body, hdr := h.get("/v1/buffer/events")
		if code != http.StatusTooManyRequests || !strings.Contains(body.Error, "SIGLAKE_BUFFER_MAX_READERS") || hdr.Get("Retry-After") == "" {
			t.Fatalf("second reader: %d %+v", code, body)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var se *reader.StatusError
		h.srv.LoadTable = load
		if _, _, err := h.read(reader.Query{}); err != nil || errors.As(err, &se) {
			t.Fatalf("after the first finished: %v", err)
		}
	})
	t.Run("process budget", func(t *testing.T) {
		// A read takes its share of the process memory budget, and waits while it is spent.
		h := newHarness(t, func(c *Config) { c.MaxReaders = 2 })
		h.e.Seal("events", gen(t, 9, 1, 100, t0)...)
		b := membudget.New(h.srv.perRead(), membudget.Options{})
		h.srv.Reserve = b.For(membudget.LoopWALBuffer).Reserve
		other, err := b.Acquire(context.Background(), membudget.LoopDrain, b.Limit())
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, _, err := h.read(reader.Query{})
			done <- err
		}()
		waitUntil := time.Now().Add(10 * time.Second)
		for loopWaiting(b, membudget.LoopWALBuffer) == 0 && time.Now().Before(waitUntil) {
			time.Sleep(5 * time.Millisecond)
		}
		select {
		case err := <-done:
			t.Fatalf("read answered (%v) while the drain held the whole budget", err)
		default:
		}
		other.Release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if s := b.Snapshot(); s.HeldBytes != 0 {
			t.Fatalf("budget after the read: %+v", s)
		}
	})
	t.Run("413", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MemoryBytes = 64 << 10; c.MaxReaders = 1 })
		h.e.Seal("events", gen(t, 8, 1, 2000, t0)...)
		_, _, err := h.read(reader.Query{})
		var se *reader.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusRequestEntityTooLarge || !strings.Contains(se.Message, "SIGLAKE_BUFFER_MEMORY_BYTES") {
			t.Fatalf("got %v, want 413", err)
		}
	})
	t.Run("decoded beyond the share is 413 too", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MemoryBytes = 5 << 20; c.MaxReaders = 1 })
		w, err := walwriter.New(h.e.WAL, walwriter.Options{Stream: "pod-0", Compression: walwriter.CompressionZstd})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range gen(t, 9, 1, 20000, t0) { // zstd: a small file that decodes to several MiB
			if err := w.Append("events", r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, _, err = h.read(reader.Query{})
		var se *reader.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusRequestEntityTooLarge || !strings.Contains(se.Message, "decodes to more") {
			t.Fatalf("got %v, want 413", err)
		}
	})
	t.Run("pages", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MaxSegments = 2 })
		recs := gen(t, 10, 5, 100, t0)
		h.e.Seal("events", recs...)
		got, ans, err := h.read(reader.Query{}, walgen.Columns...)
		if err != nil {
			t.Fatal(err)
		}
		if want := sumOf(t, recs, rows.Filter{}, walgen.Columns...); got != want || len(ans.Segments) != 5 {
			t.Fatalf("paged rows %+v in %d segments, want %+v in 5", got, len(ans.Segments), want)
		}
		if n := testutil.ToFloat64(h.srv.Metrics.Requests.WithLabelValues("200")); n != 3 {
			t.Fatalf("%v requests for 5 segments in pages of 2", n)
		}
		code, _, hdr := h.get("/v1/buffer/events")
		if code != 200 || hdr.Get("Siglake-Buffer-Complete") != "false" || hdr.Get("Siglake-Buffer-Segments") != "2" {
			t.Fatalf("first page: %d %v", code, hdr)
		}
	})
}

// TestCatalogOutage: without the table's marks the buffer answers 503, unless asked for an
// unverified answer, which says so.
func TestCatalogOutage(t *testing.T) {
	h := newHarness(t, nil)
	recs := gen(t, 11, 2, 100, t0)
	h.e.Seal("events", recs...)
	h.srv.LoadTable = func(context.Context, string) (*table.Table, error) { return nil, errors.New("connection refused") }
	_, _, err := h.read(reader.Query{})
	var se *reader.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusServiceUnavailable || !strings.Contains(se.Message, "unverified=true") {
		t.Fatalf("got %v, want 503", err)
	}
	got, ans, err := h.read(reader.Query{Unverified: true}, walgen.Columns...)
	if err != nil {
		t.Fatal(err)
	}
	if want := sumOf(t, recs, rows.Filter{}, walgen.Columns...); got != want || ans.Verified || ans.Marks != nil {
		t.Fatalf("unverified %+v %+v, want %+v", got, ans, want)
	}
}

// TestCutShortIsAnError: an answer whose stream stops after the status (the sidecar failed
// mid-answer and cut the connection, or a proxy ended it) is an error, never a short answer.
func TestCutShortIsAnError(t *testing.T) {
	md := arrow.NewMetadata([]string{reader.MetaComplete, reader.MetaVerified}, []string{"true", "true"})
	sc := arrow.NewSchema([]arrow.Field{{Name: "timestamp", Type: arrow.FixedWidthTypes.Timestamp_us}}, &md)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sc))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.TimestampBuilder).Append(1)
	rec := b.NewRecordBatch()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	b.Release()
	partial := append([]byte(nil), buf.Bytes()...) // schema and a batch, no end-of-stream marker
	_ = w.Close()
	whole := buf.Bytes()
	for name, handler := range map[string]http.HandlerFunc{
		"connection cut": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", reader.ContentType)
			_, _ = w.Write(partial)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
		"clean end without the marker": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", reader.ContentType)
			_, _ = w.Write(partial)
		},
		"whole": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", reader.ContentType)
			_, _ = w.Write(whole)
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			defer srv.Close()
			_, err := (&reader.Client{Addr: srv.URL}).Read(context.Background(), "events", reader.Query{}, func(arrow.RecordBatch) error { return nil })
			if name == "whole" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, reader.ErrCutShort) {
				t.Fatalf("got %v, want ErrCutShort", err)
			}
		})
	}
}

// TestSchemaOfNewColumns: a segment that brings a column the table lacks is served with it
// (earlier rows null), as the drain will add it; one whose column type conflicts is left out.
func TestSchemaOfNewColumns(t *testing.T) {
	h := newHarness(t, nil)
	base := gen(t, 12, 1, 50, t0)
	h.e.Seal("events", base...)
	h.e.DrainAll()
	extra := func(name string, typ arrow.DataType, fill func(array.Builder)) arrow.RecordBatch {
		r := base[0]
		fields := append(append([]arrow.Field{}, r.Schema().Fields()...), arrow.Field{Name: name, Type: typ, Nullable: true})
		bld := array.NewBuilder(memory.DefaultAllocator, typ)
		for i := 0; i < int(r.NumRows()); i++ {
			fill(bld)
		}
		col := bld.NewArray()
		bld.Release()
		cols := append(append([]arrow.Array{}, r.Columns()...), col)
		out := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, r.NumRows())
		col.Release()
		t.Cleanup(out.Release)
		return out
	}
	withCode := extra("code", arrow.PrimitiveTypes.Int64, func(b array.Builder) { b.(*array.Int64Builder).Append(7) })
	conflict := extra("severity_num", arrow.PrimitiveTypes.Int64, func(b array.Builder) { b.(*array.Int64Builder).Append(1) })
	conflict2 := extra("severity_num", arrow.BinaryTypes.String, func(b array.Builder) { b.(*array.StringBuilder).Append("x") })
	h.e.Seal("events", withCode, conflict, conflict2)
	var cols []string
	var n int64
	_, err := h.client.Read(context.Background(), "events", reader.Query{Filter: rows.Filter{Where: []rows.Condition{{Column: "code", Values: []string{"7"}}}}},
		func(rec arrow.RecordBatch) error {
			cols = nil
			for _, f := range rec.Schema().Fields() {
				cols = append(cols, f.Name)
			}
			n += rec.NumRows()
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if n != withCode.NumRows() || !strings.Contains(strings.Join(cols, ","), "code,severity_num") {
		t.Fatalf("%d rows with code=7, columns %v", n, cols)
	}
	if n := testutil.ToFloat64(h.srv.Metrics.Skipped.WithLabelValues("incompatible_schema")); n != 1 {
		t.Fatalf("skipped incompatible: %v", n)
	}
	// The drain agrees: it quarantines the conflicting segment.
	h.e.DrainAll()
	q, _ := os.ReadDir(filepath.Join(h.e.WAL, localwal.QuarantineDir))
	var reasons []string
	for _, e := range q {
		if strings.HasSuffix(e.Name(), localwal.ReasonSuffix) {
			b, _ := os.ReadFile(filepath.Join(h.e.WAL, localwal.QuarantineDir, e.Name()))
			reasons = append(reasons, string(b))
		}
	}
	if len(reasons) != 1 || !strings.Contains(reasons[0], "incompatible_schema") {
		t.Fatalf("the drain quarantined %v", reasons)
	}
}

func loopWaiting(b *membudget.Budget, loop string) int64 {
	for _, l := range b.Snapshot().Loops {
		if l.Loop == loop {
			return l.Waiting
		}
	}
	return 0
}

// TestUnparsableQueryIs400: a query string the parser refuses (more parameters than it takes, a
// bad escape) is answered 400, never served without the filters it could not read.
func TestUnparsableQueryIs400(t *testing.T) {
	h := newHarness(t, nil)
	h.e.Seal("events", gen(t, 12, 1, 100, t0)...)
	many := "/v1/buffer/events?where=service=nosuch&columns=raw" + strings.Repeat("&in=service=x", 10_001)
	for _, path := range []string{many, "/v1/buffer/events?where=service=%zz"} {
		code, body, _ := h.get(path)
		if code != http.StatusBadRequest || !strings.Contains(body.Error, "query string") {
			t.Errorf("GET %.60s...: %d %+v, want 400", path, code, body)
		}
	}
}
