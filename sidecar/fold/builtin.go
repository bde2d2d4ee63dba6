package fold

// Builtin is the specification of walgen's per-minute rollup (BuiltinTable, walgen.RollupSchema):
// counts and bytes per service and severity, folded per minute, hourly after 7 days and daily
// after 30.
var Builtin = Spec{Bucket: "1m", Keys: []string{"service", "severity"},
	Aggregates: []Aggregate{{Column: "events", Func: "count"}, {Column: "bytes", Func: "sum"}, {Column: "max_bytes", Func: "max"}},
	Tiers:      []Tier{{After: "7d", Bucket: "1h"}, {After: "30d", Bucket: "1d"}}}

// BuiltinTable is the table Builtin folds, walgen.RollupTable. It is spelled out here so that
// maintenance does not depend on the load generator (a test keeps the two equal).
const BuiltinTable = "events_1m"
