package sidecar

import (
	"context"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// EventColumns are the columns of the built-in events table, in schema order.
var EventColumns = walgen.Columns

// RowSum is siglake's one row fingerprint (package rowsum): walgen, the demo and the tests use it
// to show that a drain or rewrite kept every row exactly once, and DuckDB reproduces it.
type RowSum = rowsum.Sum

// TableRowSum reads every row of t's current snapshot through iceberg-go's scanner and
// fingerprints it over columns.
func TableRowSum(ctx context.Context, t *table.Table, columns []string) (RowSum, error) {
	return rowsum.Table(ctx, t, columns...)
}
