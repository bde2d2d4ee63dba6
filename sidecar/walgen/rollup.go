package walgen

import (
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RollupTable is the built-in per-minute rollup of the events table: requests and bytes per
// service and severity, as dashboards read them. Each ingest pod writes its own partial rows, so
// the table holds pods x minutes x keys rows until maintenance folds them (docs/folding.md).
const RollupTable = "events_1m"

// RollupSchema is the schema of RollupTable.
var RollupSchema = arrow.NewSchema([]arrow.Field{
	// The minute the counts are of (its start).
	{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "severity", Type: arrow.BinaryTypes.String, Nullable: true},
	// Events of the minute (a count: folding adds them).
	{Name: "events", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	// Bytes of their raw lines, and the longest line.
	{Name: "bytes", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "max_bytes", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// Rollup returns the partial rollup rows of one events batch (EventsSchema): per minute,
// service and severity, in time then key order. The caller releases the record.
func Rollup(mem memory.Allocator, rec arrow.RecordBatch) arrow.RecordBatch {
	type key struct {
		minute            int64
		service, severity string
		nullSvc, nullSev  bool
	}
	type agg struct{ events, bytes, max int64 }
	ts := rec.Column(0).(*array.Timestamp)
	svc := rec.Column(1).(*array.String)
	sev := rec.Column(3).(*array.String)
	raw := rec.Column(6).(*array.String)
	m := map[key]*agg{}
	minute := time.Minute.Microseconds()
	for i := 0; i < int(rec.NumRows()); i++ {
		t := int64(ts.Value(i))
		k := key{minute: t - ((t%minute)+minute)%minute, nullSvc: svc.IsNull(i), nullSev: sev.IsNull(i)}
		if !k.nullSvc {
			k.service = svc.Value(i)
		}
		if !k.nullSev {
			k.severity = sev.Value(i)
		}
		a := m[k]
		if a == nil {
			a = &agg{}
			m[k] = a
		}
		n := int64(0)
		if raw.IsValid(i) {
			n = int64(len(raw.Value(i)))
		}
		a.events++
		a.bytes += n
		a.max = max(a.max, n)
	}
	keys := make([]key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.minute != b.minute {
			return a.minute < b.minute
		}
		if a.service != b.service {
			return a.service < b.service
		}
		return a.severity < b.severity
	})
	b := array.NewRecordBuilder(mem, RollupSchema)
	defer b.Release()
	for _, k := range keys {
		a := m[k]
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(k.minute))
		appendStr(b.Field(1).(*array.StringBuilder), k.service, k.nullSvc)
		appendStr(b.Field(2).(*array.StringBuilder), k.severity, k.nullSev)
		b.Field(3).(*array.Int64Builder).Append(a.events)
		b.Field(4).(*array.Int64Builder).Append(a.bytes)
		b.Field(5).(*array.Int64Builder).Append(a.max)
	}
	return b.NewRecordBatch()
}

func appendStr(b *array.StringBuilder, v string, null bool) {
	if null {
		b.AppendNull()
		return
	}
	b.Append(v)
}
