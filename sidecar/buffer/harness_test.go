package buffer

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// harness is a lake filled by the real drain from a WAL dir, and a buffer over the same dir
// behind a real HTTP server.
type harness struct {
	t      *testing.T
	e      *testlake.Env
	srv    *Server
	http   *httptest.Server
	client *reader.Client
	reg    *prometheus.Registry
}

func newHarness(t *testing.T, tweak func(*Config)) *harness {
	t.Helper()
	e := testlake.New(t)
	reg := prometheus.NewRegistry()
	cfg := Config{WALDir: e.WAL, MaxReaders: 4, MemoryBytes: 256 << 20, MaxResponseBytes: 256 << 20, MaxSegments: DefaultMaxSegments}
	if tweak != nil {
		tweak(&cfg)
	}
	h := &harness{t: t, e: e, reg: reg}
	h.srv = &Server{Cfg: cfg, LoadTable: e.Lake.LoadTable, Metrics: NewMetrics(reg), Log: e.Log, Now: time.Now, Mem: memory.DefaultAllocator}
	h.http = httptest.NewServer(h.srv.Handler())
	t.Cleanup(h.http.Close)
	h.client = &reader.Client{Addr: h.http.URL}
	return h
}

// gen returns n walgen batches of rows rows each, starting at start (released at cleanup).
func gen(t *testing.T, seed uint64, n, rows int, start time.Time) []arrow.RecordBatch {
	g := walgen.New(walgen.Options{Seed: seed, LateFraction: 0.05, MaxLateness: time.Minute})
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

// sumOf fingerprints the rows of recs that r matches (every row for an empty r), over columns.
func sumOf(t *testing.T, recs []arrow.RecordBatch, r rows.Filter, columns ...string) rowsum.Sum {
	t.Helper()
	var s rowsum.Sum
	for _, rec := range recs {
		for i := 0; i < int(rec.NumRows()); i++ {
			if !testlake.RowMatch(rec, i, r) {
				continue
			}
			one := rec.NewSlice(int64(i), int64(i+1))
			if err := s.Add(one, columns...); err != nil {
				t.Fatal(err)
			}
			one.Release()
		}
	}
	return s
}

// read reads the buffer with q and fingerprints the answer over columns.
func (h *harness) read(q reader.Query, columns ...string) (rowsum.Sum, reader.Answer, error) {
	h.t.Helper()
	var s rowsum.Sum
	ans, err := h.client.Read(context.Background(), "events", q, func(rec arrow.RecordBatch) error { return s.Add(rec, columns...) })
	return s, ans, err
}

// get does a raw GET and decodes a JSON error body.
func (h *harness) get(path string) (int, reader.ErrorBody, http.Header) {
	h.t.Helper()
	resp, err := http.Get(h.http.URL + path)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb reader.ErrorBody
	body, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(body, &eb)
	}
	return resp.StatusCode, eb, resp.Header
}

func (h *harness) table() *table.Table { return h.e.Table("events") }
