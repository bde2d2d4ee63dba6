// Package walgen defines the built-in `events` table schema and generates realistic log rows for it,
// as an ingest pod would write them into WAL segments (the `siglake walgen` load generator and the
// demo use it; tests use it for inputs).
package walgen

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// EventsTable is the name of the built-in table ingest writes log/event rows to.
const EventsTable = "events"

// EventsSchema is the one definition of the built-in `events` table (docs/wal-format.md lists it).
// Ingest may add columns: the drain adds new ones to the table as optional.
var EventsSchema = arrow.NewSchema([]arrow.Field{
	// When the event happened; the table is partitioned by its day and sorted by it.
	{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	// Emitting service; the default group column of the group-count footer.
	{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
	// debug, info, warn, error, fatal.
	{Name: "severity", Type: arrow.BinaryTypes.String, Nullable: true},
	// W3C trace context ids as lower-case hex; null when the event has no trace.
	{Name: "trace_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "span_id", Type: arrow.BinaryTypes.String, Nullable: true},
	// The log line as received; searched by token and substring.
	{Name: "raw", Type: arrow.BinaryTypes.String, Nullable: true},
	// Free-form key/value pairs (http.method, user, region, ...).
	{Name: "attributes", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
}, nil)

// Columns are the columns of the built-in events table, in schema order (what row fingerprints
// are taken over).
var Columns = func() []string {
	out := make([]string, 0, EventsSchema.NumFields())
	for _, f := range EventsSchema.Fields() {
		out = append(out, f.Name)
	}
	return out
}()
