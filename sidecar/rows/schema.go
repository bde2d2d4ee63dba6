package rows

import "github.com/apache/arrow-go/v18/arrow"

// TableSchema is the table schema a WAL segment of schema sc asks for: its columns, with the
// timestamp column tsColumn in microseconds UTC (Iceberg timestamptz) and without the segment
// header metadata. The drain creates and evolves tables with it and the WAL buffer answers in it;
// lake plus buffer is exactly once (promise 12) only while both compute the same schema, so
// both call this.
func TableSchema(sc *arrow.Schema, tsColumn string) *arrow.Schema {
	fields := append([]arrow.Field(nil), sc.Fields()...)
	for i, f := range fields {
		if f.Name == tsColumn {
			fields[i].Type = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		}
		fields[i].Metadata = arrow.Metadata{}
	}
	return arrow.NewSchema(fields, nil)
}
