package localwal

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// logSchema is a typical structured-log table: a few low-cardinality
// labels, a trace id and a free-text message.
var logSchema = arrow.NewSchema([]arrow.Field{
	{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "level", Type: arrow.BinaryTypes.String},
	{Name: "service", Type: arrow.BinaryTypes.String},
	{Name: "host", Type: arrow.BinaryTypes.String},
	{Name: "trace_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "status", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "duration_ms", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "message", Type: arrow.BinaryTypes.String},
}, nil)

var (
	levels   = []string{"debug", "info", "info", "info", "info", "warn", "error"}
	services = []string{"api-gateway", "checkout", "payments", "search", "auth", "inventory", "mailer", "frontend"}
	paths    = []string{"/v1/orders", "/v1/cart", "/v1/login", "/healthz", "/v2/search", "/v1/users/me", "/static/app.js"}
	verbs    = []string{"GET", "POST", "PUT", "DELETE"}
	words    = strings.Fields("request handled failed retrying connection timeout upstream cache miss hit user session expired token refreshed " +
		"query executed rows returned slow backend unavailable circuit open closed payment authorized declined queued")
)

// logGen produces realistic log rows; it is deterministic for a seed.
type logGen struct {
	rng *rand.Rand
	ts  time.Time
}

func newLogGen(seed uint64, start time.Time) *logGen {
	return &logGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), ts: start}
}

func (g *logGen) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

func (g *logGen) batch(mem memory.Allocator, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, logSchema)
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

// rawBytes is the in-memory size of rec's buffers, the "MB" of MB/s.
func rawBytes(rec arrow.RecordBatch) int64 {
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
