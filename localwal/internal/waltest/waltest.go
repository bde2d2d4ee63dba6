// Package waltest generates realistic, deterministic log batches for the
// tests and benchmarks of localwal and its writer.
package waltest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// LogSchema is a typical structured-log table: a few low-cardinality
// labels, a trace id and a free-text message.
var LogSchema = arrow.NewSchema([]arrow.Field{
	{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "level", Type: arrow.BinaryTypes.String},
	{Name: "service", Type: arrow.BinaryTypes.String},
	{Name: "host", Type: arrow.BinaryTypes.String},
	{Name: "trace_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "status", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "duration_ms", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "message", Type: arrow.BinaryTypes.String},
}, nil)

// T0 is the tests' clock start.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	levels   = []string{"debug", "info", "info", "info", "info", "warn", "error"}
	services = []string{"api-gateway", "checkout", "payments", "search", "auth", "inventory", "mailer", "frontend"}
	paths    = []string{"/v1/orders", "/v1/cart", "/v1/login", "/healthz", "/v2/search", "/v1/users/me", "/static/app.js"}
	verbs    = []string{"GET", "POST", "PUT", "DELETE"}
	words    = strings.Fields("request handled failed retrying connection timeout upstream cache miss hit user session expired token refreshed " +
		"query executed rows returned slow backend unavailable circuit open closed payment authorized declined queued")
)

// LogGen produces realistic log rows; it is deterministic for a seed.
type LogGen struct {
	rng *rand.Rand
	ts  time.Time
}

// NewLogGen starts rows at start.
func NewLogGen(seed uint64, start time.Time) *LogGen {
	return &LogGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), ts: start}
}

func (g *LogGen) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

// Batch returns the next n rows.
func (g *LogGen) Batch(mem memory.Allocator, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, LogSchema)
	defer b.Release()
	tsB := b.Field(0).(*array.TimestampBuilder)
	var msg strings.Builder
	for i := 0; i < n; i++ {
		g.ts = g.ts.Add(time.Duration(g.rng.IntN(2000)) * time.Microsecond)
		tsB.Append(arrow.Timestamp(g.ts.UnixMicro()))
		lvl := g.pick(levels)
		b.Field(1).(*array.StringBuilder).Append(lvl)
		svc := g.pick(services)
		b.Field(2).(*array.StringBuilder).Append(svc)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d-%05x", svc, g.rng.IntN(4), g.rng.IntN(1<<20)))
		if g.rng.IntN(10) < 8 {
			b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("%016x%016x", g.rng.Uint64(), g.rng.Uint64()))
		} else {
			b.Field(4).AppendNull()
		}
		status := []int32{200, 200, 200, 201, 204, 304, 400, 404, 500, 503}[g.rng.IntN(10)]
		if lvl == "debug" {
			b.Field(5).AppendNull()
			b.Field(6).AppendNull()
		} else {
			b.Field(5).(*array.Int32Builder).Append(status)
			b.Field(6).(*array.Float64Builder).Append(float64(g.rng.IntN(500000)) / 1000)
		}
		msg.Reset()
		fmt.Fprintf(&msg, "%s %s %d", g.pick(verbs), g.pick(paths), status)
		for w := 3 + g.rng.IntN(12); w > 0; w-- {
			msg.WriteByte(' ')
			msg.WriteString(g.pick(words))
		}
		fmt.Fprintf(&msg, " user_id=%d bytes=%d", g.rng.IntN(1_000_000), g.rng.IntN(1<<16))
		b.Field(7).(*array.StringBuilder).Append(msg.String())
	}
	return b.NewRecordBatch()
}

// Batches returns n batches of rows rows (seed 42) and their RawBytes.
func Batches(n, rows int) ([]arrow.RecordBatch, int64) {
	gen := NewLogGen(42, T0)
	var recs []arrow.RecordBatch
	var raw int64
	for i := 0; i < n; i++ {
		r := gen.Batch(memory.DefaultAllocator, rows)
		raw += RawBytes(r)
		recs = append(recs, r)
	}
	return recs, raw
}

// RawBytes is the in-memory size of rec's buffers, the "MB" of MB/s.
func RawBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				n += int64(buf.Len())
			}
		}
	}
	return n
}
