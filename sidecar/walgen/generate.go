package walgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Options shape the generated rows.
type Options struct {
	Seed uint64
	// LateFraction of rows get a timestamp up to MaxLateness in the past: late and out-of-order
	// rows are what makes ingest files overlap in time.
	LateFraction float64
	MaxLateness  time.Duration
	Services     int // distinct services (default 12)
	Hosts        int // distinct hosts (default 40)
}

// Generator makes deterministic log rows from a seed.
type Generator struct {
	opts     Options
	rng      *rand.Rand
	services []string
	hosts    []string
}

// New returns a generator; the same options give the same rows.
func New(opts Options) *Generator {
	if opts.Services <= 0 {
		opts.Services = 12
	}
	if opts.Hosts <= 0 {
		opts.Hosts = 40
	}
	if opts.MaxLateness <= 0 {
		opts.MaxLateness = time.Minute
	}
	g := &Generator{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))}
	base := []string{"api", "auth", "billing", "cart", "checkout", "search", "inventory", "email",
		"gateway", "payments", "profile", "shipping", "recommend", "ledger", "catalog", "media"}
	for i := 0; i < opts.Services; i++ {
		name := base[i%len(base)]
		if i >= len(base) {
			name = fmt.Sprintf("%s-%d", name, i/len(base))
		}
		g.services = append(g.services, name)
	}
	for i := 0; i < opts.Hosts; i++ {
		g.hosts = append(g.hosts, fmt.Sprintf("ip-10-0-%d-%d", i/250, i%250+1))
	}
	return g
}

var (
	severities = []string{"debug", "info", "info", "info", "info", "info", "warn", "warn", "error", "fatal"}
	methods    = []string{"GET", "GET", "GET", "POST", "PUT", "DELETE"}
	paths      = []string{"/api/v1/users", "/api/v1/orders", "/api/v1/cart", "/healthz", "/api/v2/search", "/api/v1/payments", "/static/app.js"}
	users      = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"}
	regions    = []string{"eu-west-1", "us-east-1", "us-west-2", "ap-south-1"}
	messages   = []string{
		"request completed", "cache miss for key", "connection reset by peer", "retrying upstream call",
		"slow query detected", "token expired", "payment authorized", "queue depth above threshold",
		"failed to parse payload", "user session started",
	}
)

// Batch returns n rows whose timestamps advance by step from start (late rows excepted).
// The caller releases the record.
func (g *Generator) Batch(mem memory.Allocator, start time.Time, n int, step time.Duration) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, EventsSchema)
	defer b.Release()
	ts := b.Field(0).(*array.TimestampBuilder)
	svc := b.Field(1).(*array.StringBuilder)
	host := b.Field(2).(*array.StringBuilder)
	sev := b.Field(3).(*array.StringBuilder)
	trace := b.Field(4).(*array.StringBuilder)
	span := b.Field(5).(*array.StringBuilder)
	raw := b.Field(6).(*array.StringBuilder)
	attrs := b.Field(7).(*array.MapBuilder)
	keys := attrs.KeyBuilder().(*array.StringBuilder)
	vals := attrs.ItemBuilder().(*array.StringBuilder)
	for _, fb := range b.Fields() {
		fb.Reserve(n)
	}
	var sb strings.Builder
	for i := 0; i < n; i++ {
		t := start.Add(time.Duration(i) * step)
		if g.opts.LateFraction > 0 && g.rng.Float64() < g.opts.LateFraction {
			t = t.Add(-time.Duration(g.rng.Int64N(int64(g.opts.MaxLateness))))
		}
		ts.Append(arrow.Timestamp(t.UnixMicro()))
		s := g.services[g.rng.IntN(len(g.services))]
		h := g.hosts[g.rng.IntN(len(g.hosts))]
		level := severities[g.rng.IntN(len(severities))]
		svc.Append(s)
		host.Append(h)
		sev.Append(level)
		if g.rng.IntN(4) == 0 {
			trace.AppendNull()
			span.AppendNull()
		} else {
			trace.Append(fmt.Sprintf("%016x%016x", g.rng.Uint64(), g.rng.Uint64()))
			span.Append(fmt.Sprintf("%016x", g.rng.Uint64()))
		}
		method, path, user := methods[g.rng.IntN(len(methods))], paths[g.rng.IntN(len(paths))], users[g.rng.IntN(len(users))]
		status := []int{200, 200, 200, 201, 204, 301, 400, 404, 500, 503}[g.rng.IntN(10)]
		sb.Reset()
		fmt.Fprintf(&sb, "%s %s %s/%d status=%d duration_ms=%d user=%s msg=%q",
			level, method, path, g.rng.IntN(100000), status, g.rng.IntN(2000), user, messages[g.rng.IntN(len(messages))])
		raw.Append(sb.String())
		attrs.Append(true)
		keys.Append("http.method")
		vals.Append(method)
		keys.Append("user")
		vals.Append(user)
		keys.Append("region")
		vals.Append(regions[g.rng.IntN(len(regions))])
	}
	return b.NewRecordBatch()
}
