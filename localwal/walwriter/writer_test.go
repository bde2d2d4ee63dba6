package walwriter

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/internal/waltest"
)

// The test data of localwal's tests.
var (
	t0        = waltest.T0
	logSchema = waltest.LogSchema
	newLogGen = waltest.NewLogGen
	rawBytes  = waltest.RawBytes
)

// fakeClock is a settable clock for writer tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type sealLog struct {
	mu   sync.Mutex
	segs []SealedSegment
}

func (l *sealLog) add(s SealedSegment) { l.mu.Lock(); l.segs = append(l.segs, s); l.mu.Unlock() }

func newTestWriter(t *testing.T, dir string, clk *fakeClock, log *sealLog, mod func(*Options)) *Writer {
	t.Helper()
	opts := Options{Stream: "ingest-0", RollBytes: 64 << 10, RollAge: 5 * time.Second, Now: clk.Now}
	if log != nil {
		opts.OnSeal = log.add
	}
	if mod != nil {
		mod(&opts)
	}
	w, err := New(dir, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return w
}

// altSchema is logSchema plus a column: appending it is a schema change.
var altSchema = arrow.NewSchema(append(slices.Clone(logSchema.Fields()),
	arrow.Field{Name: "region", Type: arrow.BinaryTypes.String}), nil)

func altBatch(mem memory.Allocator, base arrow.RecordBatch) arrow.RecordBatch {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	for i := int64(0); i < base.NumRows(); i++ {
		b.Append("eu-west-1")
	}
	region := b.NewArray()
	defer region.Release()
	return array.NewRecordBatch(altSchema, append(slices.Clone(base.Columns()), region), base.NumRows())
}

func TestRoundTrip(t *testing.T) {
	for _, comp := range []Compression{CompressionZstd, CompressionNone} {
		t.Run(string(comp), func(t *testing.T) { testRoundTrip(t, comp) })
	}
}

func testRoundTrip(t *testing.T, comp Compression) {
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	var log sealLog
	roll := int64(64 << 10)
	if comp == CompressionZstd {
		roll = 16 << 10
	}
	w := newTestWriter(t, dir, clk, &log, func(o *Options) { o.Compression = comp; o.RollBytes = roll })

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	gen := newLogGen(1, t0)
	tables := []string{"logs", "events", "audit_2"}
	appended := map[string][]arrow.RecordBatch{}
	appendTo := func(table string, rec arrow.RecordBatch) {
		t.Helper()
		if err := w.Append(table, rec); err != nil {
			t.Fatalf("Append(%s): %v", table, err)
		}
		appended[table] = append(appended[table], rec)
	}
	// Phase 1: enough rows to roll "logs" by size several times.
	for i := 0; i < 40; i++ {
		appendTo(tables[i%3], gen.Batch(mem, 10+i))
	}
	sizeRolls := len(log.segs)
	if sizeRolls == 0 {
		t.Fatalf("no segment was sealed by size")
	}
	for _, s := range log.segs {
		if s.Size < roll {
			t.Errorf("%s sealed by size at %d bytes, below RollBytes", s.Name, s.Size)
		}
	}
	// Phase 2: age. SealDue before the age does nothing; after it, every
	// open segment is sealed.
	clk.Advance(4 * time.Second)
	if err := w.SealDue(clk.Now()); err != nil {
		t.Fatal(err)
	}
	if len(log.segs) != sizeRolls {
		t.Fatalf("SealDue sealed young segments")
	}
	openNow := len(w.open)
	if openNow == 0 {
		t.Fatal("no open segment left to age")
	}
	clk.Advance(time.Second)
	if err := w.SealDue(clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := len(log.segs) - sizeRolls; got != openNow || len(w.open) != 0 {
		t.Fatalf("SealDue at RollAge sealed %d segments, want %d", got, openNow)
	}
	// An aged segment is also rolled by the next Append to its table.
	appendTo("logs", gen.Batch(mem, 10))
	before := len(log.segs)
	clk.Advance(6 * time.Second)
	appendTo("logs", gen.Batch(mem, 10))
	if len(log.segs) != before+1 || log.segs[before].Rows != 10 {
		t.Fatalf("Append after RollAge did not seal the aged segment: %+v", log.segs[before:])
	}
	// Phase 3: schema change seals the current segment of that table.
	before = len(log.segs)
	base := gen.Batch(mem, 20)
	alt := altBatch(mem, base)
	base.Release()
	appendTo("events", gen.Batch(mem, 5))
	appendTo("events", alt)
	if len(log.segs) != before+1 || log.segs[before].Table != "events" {
		t.Fatalf("schema change did not seal the events segment")
	}
	appendTo("events", gen.Batch(mem, 5)) // and back again
	// Phase 4: Close seals the rest.
	open := 2 // logs (one batch) and events
	before = len(log.segs)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(log.segs) != before+open {
		t.Fatalf("Close sealed %d segments, want %d", len(log.segs)-before, open)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "*"+localwal.OpenSuffix)); len(ents) != 0 {
		t.Fatalf("open segments left after Close: %v", ents)
	}

	// Scan sees exactly what OnSeal reported, in seq order.
	segs, err := localwal.Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != len(log.segs) {
		t.Fatalf("Scan found %d segments, OnSeal reported %d", len(segs), len(log.segs))
	}
	bySeq := slices.Clone(log.segs)
	slices.SortFunc(bySeq, func(a, b SealedSegment) int { return int(a.Seq) - int(b.Seq) })
	for i, s := range segs {
		want := bySeq[i]
		if s.Name != want.Name || s.Size != want.Size || s.Table != want.Table {
			t.Errorf("scan[%d] = %s/%d, OnSeal said %s/%d", i, s.Name, s.Size, want.Name, want.Size)
		}
	}

	// Reading back yields every appended batch, per table, in order, and
	// the records outlive the reader.
	readMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	got := map[string][]*localwal.Segment{}
	for _, s := range segs {
		seg, err := localwal.ReadAll(s.Path, localwal.ReadOptions{Mem: readMem})
		if err != nil {
			t.Fatalf("ReadAll(%s): %v", s.Name, err)
		}
		if seg.Header.Stream != "ingest-0" || seg.Header.Seq != s.Seq || !seg.Header.Created.Equal(seg.Header.Created.Truncate(time.Millisecond)) {
			t.Errorf("%s: header %+v", s.Name, seg.Header)
		}
		got[s.Table] = append(got[s.Table], seg)
	}
	for _, table := range tables {
		var recs []arrow.RecordBatch
		for _, seg := range got[table] {
			recs = append(recs, seg.Records...)
		}
		if len(recs) != len(appended[table]) {
			t.Fatalf("%s: read %d batches, appended %d", table, len(recs), len(appended[table]))
		}
		for i := range recs {
			if !array.RecordEqual(recs[i], appended[table][i]) {
				t.Fatalf("%s: batch %d differs after the round trip", table, i)
			}
		}
	}
	for _, recs := range appended {
		for _, r := range recs {
			r.Release()
		}
	}
	mem.AssertSize(t, 0)
	for _, segs := range got {
		for _, s := range segs {
			s.Release()
		}
	}
	readMem.AssertSize(t, 0)
}

func TestWriterRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	w := newTestWriter(t, dir, clk, nil, nil)
	defer w.Close()
	mem := memory.NewGoAllocator()
	rec := newLogGen(2, t0).Batch(mem, 3)
	defer rec.Release()
	if err := w.Append("Bad-Name", rec); err == nil {
		t.Error("Append accepted a bad table name")
	}
	noTS := arrow.NewSchema([]arrow.Field{{Name: "msg", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(mem, noTS)
	b.Field(0).(*array.StringBuilder).Append("x")
	bad := b.NewRecordBatch()
	b.Release()
	defer bad.Release()
	if err := w.Append("logs", bad); err == nil {
		t.Error("Append accepted a batch without a timestamp column")
	}
	if _, err := New(t.TempDir(), Options{Stream: "bad stream"}); err == nil {
		t.Error("New accepted an invalid stream id")
	}
	if _, err := New(t.TempDir(), Options{}); err == nil {
		t.Error("New accepted a new dir without a stream id")
	}
	if _, err := New(t.TempDir(), Options{Stream: "x", Compression: "lz5"}); err == nil {
		t.Error("New accepted an unknown compression")
	}
}

func TestWriterLocksDir(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	w := newTestWriter(t, dir, clk, nil, nil)
	if _, err := New(dir, Options{Stream: "ingest-0", Now: clk.Now}); err == nil {
		t.Fatal("a second writer opened a locked dir")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w2 := newTestWriter(t, dir, clk, nil, nil)
	w2.Close()
}

// appendOne writes one small batch to table and returns the sealed segment.
func appendOne(t *testing.T, w *Writer, log *sealLog, table string) SealedSegment {
	t.Helper()
	rec := newLogGen(3, t0).Batch(memory.DefaultAllocator, 5)
	defer rec.Release()
	if err := w.Append(table, rec); err != nil {
		t.Fatal(err)
	}
	if err := w.SealDue(time.Now().Add(24 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	return log.segs[len(log.segs)-1]
}

func TestStreamPersistence(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	var log sealLog
	seen := map[[2]uint64]bool{}
	record := func(s SealedSegment) {
		key := [2]uint64{s.Incarnation, s.Seq}
		if seen[key] {
			t.Fatalf("(incarnation, seq) %v used twice", key)
		}
		seen[key] = true
	}

	w := newTestWriter(t, dir, clk, &log, nil)
	inc := w.Incarnation()
	if inc != uint64(t0.UnixNano()) {
		t.Fatalf("first incarnation %d, want the clock's unix nanos %d", inc, t0.UnixNano())
	}
	record(appendOne(t, w, &log, "logs"))
	record(appendOne(t, w, &log, "events"))
	w.Close()

	// Restart without a stream id: the STREAM file supplies it, seqs go on.
	w = newTestWriter(t, dir, clk, &log, func(o *Options) { o.Stream = "" })
	if w.Incarnation() != inc || w.Stream() != "ingest-0" {
		t.Fatalf("restart changed identity: %s/%d", w.Stream(), w.Incarnation())
	}
	s := appendOne(t, w, &log, "logs")
	record(s)
	if s.Seq != 3 {
		t.Fatalf("seq after restart = %d, want 3", s.Seq)
	}
	w.Close()

	// Drain everything: the seq must still not repeat.
	segs, _ := localwal.Scan(dir)
	if err := localwal.Remove(dir, segs...); err != nil {
		t.Fatal(err)
	}
	if segs, _ := localwal.Scan(dir); len(segs) != 0 {
		t.Fatalf("Remove left %d segments", len(segs))
	}
	w = newTestWriter(t, dir, clk, &log, nil)
	s = appendOne(t, w, &log, "logs")
	record(s)
	if s.Seq != 4 || s.Incarnation != inc {
		t.Fatalf("after removing every segment got (%d,%d), want (%d,4)", s.Incarnation, s.Seq, inc)
	}
	w.Close()

	// A writer for another stream refuses the dir.
	if _, err := New(dir, Options{Stream: "ingest-1", Now: clk.Now}); err == nil {
		t.Fatal("a dir owned by ingest-0 was opened for ingest-1")
	}

	// STREAM lost: a new incarnation, seq 1, above the old one even when
	// the clock went backwards (a segment of the old incarnation remains).
	if err := os.Remove(filepath.Join(dir, localwal.StreamFile)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(-time.Hour)
	w = newTestWriter(t, dir, clk, &log, nil)
	if w.Incarnation() <= inc {
		t.Fatalf("new incarnation %d not above old %d", w.Incarnation(), inc)
	}
	s = appendOne(t, w, &log, "logs")
	record(s)
	if s.Seq != 1 {
		t.Fatalf("first seq of a new incarnation = %d, want 1", s.Seq)
	}
	w.Close()

	// STREAM lost with an empty dir: the clock decides.
	if err := os.Remove(filepath.Join(dir, localwal.StreamFile)); err != nil {
		t.Fatal(err)
	}
	segs, _ = localwal.Scan(dir)
	localwal.Remove(dir, segs...)
	clk.Advance(2 * time.Hour)
	w = newTestWriter(t, dir, clk, &log, nil)
	if w.Incarnation() != uint64(clk.Now().UnixNano()) {
		t.Fatalf("incarnation %d, want clock %d", w.Incarnation(), clk.Now().UnixNano())
	}
	w.Close()

	// A corrupt STREAM file stops the writer instead of guessing.
	os.WriteFile(filepath.Join(dir, localwal.StreamFile), []byte("{"), 0o644)
	if _, err := New(dir, Options{Stream: "ingest-0"}); err == nil {
		t.Fatal("New accepted a corrupt STREAM file")
	}
}

// crash abandons w without sealing, as a killed process would.
func crash(t *testing.T, w *Writer) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, seg := range w.open {
		seg.f.Close()
	}
	w.open = nil
	w.closed = true
	if err := w.unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestRecoverOpenSegments(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	var log sealLog
	w := newTestWriter(t, dir, clk, &log, func(o *Options) { o.RollBytes = 1 << 30 })
	gen := newLogGen(4, t0)
	mem := memory.DefaultAllocator
	var rows [3]int64
	for i := 0; i < 9; i++ {
		rec := gen.Batch(mem, 100)
		if err := w.Append([]string{"logs", "events", "metrics"}[i%3], rec); err != nil {
			t.Fatal(err)
		}
		rows[i%3] += 100
		rec.Release()
	}
	crash(t, w)
	opens, _ := filepath.Glob(filepath.Join(dir, "*"+localwal.OpenSuffix))
	if len(opens) != 3 {
		t.Fatalf("want 3 open segments, found %v", opens)
	}
	slices.Sort(opens)
	// events: intact (all three batches kept); logs: cut inside its last
	// batch (two kept); metrics: cut inside the schema (nothing to keep).
	cut := func(path string, keep func(size int64) int64) {
		fi, _ := os.Stat(path)
		if err := os.Truncate(path, keep(fi.Size())); err != nil {
			t.Fatal(err)
		}
	}
	find := func(table string) string {
		for _, p := range opens {
			if filepath.Base(p)[:len(table)+1] == table+"." {
				return p
			}
		}
		t.Fatalf("no open segment for %s", table)
		return ""
	}
	cut(find("logs"), func(n int64) int64 { return n - 100 })
	// events also got garbage after its intact batches (a torn write that
	// left junk): the batches are kept, the junk is cut.
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = byte(i*7 + 3)
	}
	copy(junk, []byte{0xff, 0xff, 0xff, 0xff, 0x40, 0, 0, 0})
	f, err := os.OpenFile(find("events"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(junk)
	f.Close()
	cut(find("metrics"), func(int64) int64 { return 50 })
	// A stray open file with a bad header is quarantined, not deleted.
	stray := filepath.Join(dir, openName("audit", 1, 99))
	strayRec := gen.Batch(mem, 10)
	os.WriteFile(stray, badVersionStream(t, strayRec), 0o644)
	strayRec.Release()

	actions := map[string]string{}
	w = newTestWriter(t, dir, clk, &log, func(o *Options) {
		o.OnRecover = func(r localwal.Recovered) { actions[filepath.Base(r.Path)[:5]] = r.Action }
	})
	defer w.Close()
	want := map[string]string{"logs.": "sealed", "event": "sealed", "metri": "removed", "audit": "quarantined"}
	if !maps.Equal(actions, want) {
		t.Fatalf("recovery actions %v, want %v", actions, want)
	}
	if opens, _ := filepath.Glob(filepath.Join(dir, "*"+localwal.OpenSuffix)); len(opens) != 0 {
		t.Fatalf("open segments left after recovery: %v", opens)
	}
	segs, err := localwal.Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	gotRows := map[string]int64{}
	for _, s := range segs {
		seg, err := localwal.ReadAll(s.Path, localwal.ReadOptions{})
		if err != nil {
			t.Fatalf("recovered segment unreadable: %v", err)
		}
		gotRows[s.Table] += seg.Rows
		seg.Release()
	}
	if gotRows["events"] != 300 || gotRows["logs"] != 200 || gotRows["metrics"] != 0 {
		t.Fatalf("recovered rows %v, want events 300, logs 200, metrics 0", gotRows)
	}
	if _, err := os.Stat(filepath.Join(dir, localwal.QuarantineDir, filepath.Base(stray)+localwal.ReasonSuffix)); err != nil {
		t.Fatalf("stray open segment not quarantined: %v", err)
	}
	// New segments come after the recovered ones.
	s := appendOne(t, w, &log, "logs")
	if s.Seq <= segs[len(segs)-1].Seq {
		t.Fatalf("new seq %d not above recovered %d", s.Seq, segs[len(segs)-1].Seq)
	}
}

func TestWriterFailsForGood(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	w := newTestWriter(t, dir, clk, nil, nil)
	rec := newLogGen(5, t0).Batch(memory.DefaultAllocator, 5)
	defer rec.Release()
	if err := w.Append("logs", rec); err != nil {
		t.Fatal(err)
	}
	// Break the open segment's file underneath the writer.
	w.mu.Lock()
	w.open["logs"].f.Close()
	w.mu.Unlock()
	if err := w.Append("logs", rec); err == nil {
		t.Fatal("Append on a closed file succeeded")
	}
	if err := w.Append("events", rec); err == nil || !errors.Is(err, os.ErrClosed) {
		t.Fatalf("writer is not failed for good: %v", err)
	}
	w.Close()
}

func TestWriterConcurrentAppend(t *testing.T) {
	dir := t.TempDir()
	var log sealLog
	w, err := New(dir, Options{Stream: "ingest-0", RollBytes: 32 << 10, RollAge: 20 * time.Millisecond, OnSeal: log.add})
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, batches, rows = 4, 30, 20
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			gen := newLogGen(uint64(100+g), t0)
			for i := 0; i < batches; i++ {
				rec := gen.Batch(memory.DefaultAllocator, rows)
				if err := w.Append([]string{"logs", "events"}[(g+i)%2], rec); err != nil {
					t.Error(err)
				}
				rec.Release()
			}
		}(g)
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				if err := w.SealDue(time.Now()); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	// An empty batch creates nothing.
	empty := newLogGen(1, t0).Batch(memory.DefaultAllocator, 0)
	if err := w.Append("nothing", empty); err != nil {
		t.Fatal(err)
	}
	empty.Release()
	wg.Wait()
	close(stop)
	<-ticked
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := localwal.Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	seqs := map[uint64]bool{}
	for _, s := range segs {
		if s.Table == "nothing" {
			t.Fatal("an empty batch produced a segment")
		}
		seg, err := localwal.ReadAll(s.Path, localwal.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		total += seg.Rows
		seg.Release()
		if seqs[s.Seq] {
			t.Fatalf("seq %d used twice", s.Seq)
		}
		seqs[s.Seq] = true
	}
	if total != goroutines*batches*rows || len(segs) != len(log.segs) {
		t.Fatalf("read %d rows in %d segments, want %d rows in %d", total, len(segs), goroutines*batches*rows, len(log.segs))
	}
}

// badVersionStream is rec as an Arrow IPC stream whose header says format
// version 7, which no reader accepts.
func badVersionStream(t *testing.T, rec arrow.RecordBatch) []byte {
	t.Helper()
	md := arrow.NewMetadata([]string{localwal.KeyVersion}, []string{"7"})
	schema := arrow.NewSchema(rec.Schema().Fields(), &md)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	r := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
	defer r.Release()
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
