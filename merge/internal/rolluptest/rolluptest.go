// Package rolluptest is the rollup table the fold tests of merge and merge/folding share: its
// schema, rows with nulls as nil pointers, and the record of a slice of rows. Arrow only, so
// folding's own tests can import it without a cycle.
package rolluptest

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Microseconds in a minute, an hour and a day: the rollup's time unit.
const (
	Minute = int64(60e6)
	Hour   = 60 * Minute
	Day    = 24 * Hour
)

// Schema is a per-minute rollup: keys service, severity (nullable) and code; a count, a byte sum
// and latency extremes.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "severity", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "code", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "events", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "bytes", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "latency_min", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "latency_max", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// Row is one row of Schema; nil pointers are nulls.
type Row struct {
	TS                     int64
	Service, Severity      *string
	Code                   *int32
	Events, Bytes          *int64
	LatencyMin, LatencyMax *float64
}

// Ptr is a pointer to a copy of v, for the nullable fields of a Row literal.
func Ptr[T any](v T) *T { return &v }

// Record is rows as one record batch of Schema.
func Record(rows []Row) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, Schema)
	defer b.Release()
	for _, row := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(row.TS))
		appendOpt(b.Field(1), row.Service, func(v string) { b.Field(1).(*array.StringBuilder).Append(v) })
		appendOpt(b.Field(2), row.Severity, func(v string) { b.Field(2).(*array.StringBuilder).Append(v) })
		appendOpt(b.Field(3), row.Code, func(v int32) { b.Field(3).(*array.Int32Builder).Append(v) })
		appendOpt(b.Field(4), row.Events, func(v int64) { b.Field(4).(*array.Int64Builder).Append(v) })
		appendOpt(b.Field(5), row.Bytes, func(v int64) { b.Field(5).(*array.Int64Builder).Append(v) })
		appendOpt(b.Field(6), row.LatencyMin, func(v float64) { b.Field(6).(*array.Float64Builder).Append(v) })
		appendOpt(b.Field(7), row.LatencyMax, func(v float64) { b.Field(7).(*array.Float64Builder).Append(v) })
	}
	return b.NewRecordBatch()
}

func appendOpt[T any](b array.Builder, v *T, app func(T)) {
	if v == nil {
		b.AppendNull()
		return
	}
	app(*v)
}
