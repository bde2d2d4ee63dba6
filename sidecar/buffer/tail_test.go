package buffer

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/buffer/segments"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/walgen"
)

// syncBuffer is a bytes.Buffer safe for the follower's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func ordered(t *testing.T, seed uint64, n, rows int, start time.Time) []arrow.RecordBatch {
	g := walgen.New(walgen.Options{Seed: seed})
	var recs []arrow.RecordBatch
	for i := 0; i < n; i++ {
		recs = append(recs, g.Batch(memory.DefaultAllocator, start.Add(time.Duration(i*rows)*time.Millisecond), rows, time.Millisecond))
	}
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return recs
}

// TestTail: the newest rows come from the lake and the buffer together, once each, oldest
// first; a filter applies to both; --follow prints rows as they are sealed.
func TestTail(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	recs := ordered(t, 41, 4, 100, t0) // rows at t0 + 0..399 ms
	h.e.Seal("events", recs[:3]...)
	h.e.DrainAll() // rows 0..299 in the lake
	h.e.Seal("events", recs[3])
	load := func(ctx context.Context) (*table.Table, error) { return h.e.Lake.LoadTable(ctx, "events") }
	var out, errOut bytes.Buffer
	// The newest 150: 50 from the lake, 100 from the buffer.
	err := reader.Tail(ctx, load, reader.Buffers{h.client}, reader.TailOptions{Table: "events", Lines: 150, Query: reader.Query{Columns: []string{"timestamp", "service"}}}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 150 {
		t.Fatalf("%d lines: %s", len(lines), errOut.String())
	}
	for i, l := range lines {
		want := t0.Add(time.Duration(250+i) * time.Millisecond).Format("2006-01-02T15:04:05.000000Z")
		if !strings.HasPrefix(l, want+" service=") {
			t.Fatalf("line %d %q, want the row at %s", i, l, want)
		}
	}
	// A filter, as JSON: every row of the service, from both.
	svc := recs[0].Column(recs[0].Schema().FieldIndices("service")[0]).(*array.String).Value(0)
	f := rows.Filter{Where: []rows.Condition{{Column: "service", Values: []string{svc}}}}
	out.Reset()
	if err := reader.Tail(ctx, load, reader.Buffers{h.client}, reader.TailOptions{Table: "events", Lines: 1000, JSON: true, Query: reader.Query{Filter: f}}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	want := sumOf(t, recs, f, walgen.Columns...).Rows
	n := int64(0)
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil || row["service"] != svc {
			t.Fatalf("line %q: %v", l, err)
		}
		if _, ok := row["attributes"].(map[string]any); !ok {
			t.Fatalf("attributes are not an object: %q", l)
		}
		n++
	}
	if n != want {
		t.Fatalf("%d rows of %s, want %d", n, svc, want)
	}
	// Follow: the rows sealed after the start are printed as they come, also those committed
	// between two polls (retention keeps them).
	h.e.Drain.Retire = (&segments.Retention{Keep: time.Minute}).Retire
	later := ordered(t, 42, 2, 10, t0.Add(time.Hour))
	fout, ferr := follow(t, h, load, 20*time.Millisecond, func(func() string) {
		h.e.Seal("events", later[0])
		h.e.DrainAll()
		h.e.Seal("events", later[1])
	}, func(out, _ string) bool { return strings.Count(out, "\n") >= 21 })
	got := strings.Split(strings.TrimSpace(fout), "\n")
	if len(got) != 21 || got[0] != t0.Add(399*time.Millisecond).Format("2006-01-02T15:04:05.000000Z") || ferr != "" {
		t.Fatalf("followed %d lines, first %q (%s)", len(got), got[0], ferr)
	}
	for i, l := range got[1:] {
		if want := t0.Add(time.Hour + time.Duration(i)*time.Millisecond).Format("2006-01-02T15:04:05.000000Z"); l != want {
			t.Fatalf("followed line %d %q, want %s", i, l, want)
		}
	}
	// Without retention a commit between two polls is said, never silently skipped.
	h.e.Drain.Retire = nil
	// A poll that fell between the seal and the commit would read the rows from the buffer,
	// which is no gap (on a loaded machine it did): the buffer answers no poll from the seal to
	// the commit, so the commit lands between two polls.
	var gate sync.RWMutex
	gated := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gate.RLock()
		defer gate.RUnlock()
		h.srv.Handler().ServeHTTP(w, r)
	}))
	defer gated.Close()
	h.client = &reader.Client{Addr: gated.URL}
	more := ordered(t, 43, 2, 10, t0.Add(2*time.Hour))
	_, ferr = follow(t, h, load, 300*time.Millisecond, func(func() string) {
		gate.Lock()
		defer gate.Unlock()
		h.e.Seal("events", more[0])
		h.e.DrainAll()
	}, func(_, errs string) bool { return strings.Contains(errs, "fell behind") })
	if !strings.Contains(ferr, "fell behind") || !strings.Contains(ferr, "reload the table") {
		t.Fatalf("stderr %q", ferr)
	}
}

// follow runs Tail --follow -n 1 until done says so, calling act once the first line is out.
func follow(t *testing.T, h *harness, load func(context.Context) (*table.Table, error), every time.Duration, act func(errs func() string), done func(out, errs string) bool) (string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	ended := make(chan error, 1)
	go func() {
		ended <- reader.Tail(ctx, load, reader.Buffers{h.client}, reader.TailOptions{Table: "events", Lines: 1, Follow: true, Interval: every,
			Query: reader.Query{Columns: []string{"timestamp"}}}, &out, &errs)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for out.String() == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	act(errs.String)
	for !done(out.String(), errs.String()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	return out.String(), errs.String()
}
