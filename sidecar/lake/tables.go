package lake

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// TimestampColumn is the column every siglake table is partitioned (by day) and sorted by.
const TimestampColumn = "timestamp"

// PartitionField is the name of the day partition field.
const PartitionField = "timestamp_day"

// SchemaError says a segment's schema cannot go into its table; the drain quarantines the segment.
type SchemaError struct {
	Table, Column, Have, Want string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("table %s column %q: segment has type %s, table accepts %s (only new optional columns may be added)",
		e.Table, e.Column, e.Have, e.Want)
}

// EnsureTable returns table name, creating it from the segment schema sc when it does not exist
// (partitioned by day(timestamp), sorted by timestamp) and adding, as optional, any column sc has
// that the table lacks. sc must already have its timestamp column in microseconds, UTC.
// A column whose type differs from the table's returns a *SchemaError.
func (l *Lake) EnsureTable(ctx context.Context, name string, sc *arrow.Schema) (*table.Table, error) {
	for attempt := 0; ; attempt++ {
		t, err := l.cat.LoadTable(ctx, l.Ident(name))
		if errors.Is(err, catalog.ErrNoSuchTable) {
			t, err = l.createTable(ctx, name, sc)
			if errors.Is(err, catalog.ErrTableAlreadyExists) && attempt < 3 {
				continue // another process created it first
			}
		}
		if err != nil {
			return nil, fmt.Errorf("ensure table %s.%s: %w", l.ns[0], name, err)
		}
		missing, err := missingColumns(name, t.Schema(), sc)
		if err != nil || len(missing) == 0 {
			return t, err
		}
		txn := t.NewTransaction()
		upd := txn.UpdateSchema(true, false)
		for _, f := range missing {
			upd = upd.AddColumn([]string{f.Name}, f.Type, f.Doc, false, nil)
		}
		if err := upd.Commit(); err != nil {
			return nil, fmt.Errorf("add columns to %s.%s: %w", l.ns[0], name, err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			if attempt < 3 {
				continue // a concurrent schema change: reload and compare again
			}
			return nil, fmt.Errorf("commit new columns of %s.%s: %w", l.ns[0], name, err)
		}
	}
}

func (l *Lake) createTable(ctx context.Context, name string, sc *arrow.Schema) (*table.Table, error) {
	isc, err := table.ArrowSchemaToIcebergWithFreshIDs(sc, true)
	if err != nil { // the segment's fault, like the same conversion in missingColumns
		return nil, &SchemaError{Table: name, Column: "(schema)", Have: err.Error(), Want: "types Iceberg can store"}
	}
	ts, ok := isc.FindFieldByName(TimestampColumn)
	if !ok {
		return nil, fmt.Errorf("table %s: schema has no %q column", name, TimestampColumn)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{ts.ID}, FieldID: 1000, Name: PartitionField, Transform: iceberg.DayTransform{},
	})
	order, err := table.NewSortOrder(1, []table.SortField{{
		SourceIDs: []int{ts.ID}, Transform: iceberg.IdentityTransform{},
		Direction: table.SortASC, NullOrder: table.NullsFirst,
	}})
	if err != nil {
		return nil, err
	}
	props := iceberg.Properties{
		"format-version":                  "2",
		"write.parquet.compression-codec": "zstd",
		tableprops.CreatedBy:              "siglake",
	}
	maps.Copy(props, MergeProps(nil, l.mergeMinCount))
	return l.cat.CreateTable(ctx, l.Ident(name), isc,
		catalog.WithPartitionSpec(&spec), catalog.WithSortOrder(order), catalog.WithProperties(props))
}

// CheckColumns is EnsureTable's check without the change: the top-level fields of sc that t lacks
// (which EnsureTable would add as optional), or a *SchemaError for a field whose type differs, for
// which the drain quarantines the segment. sc as for EnsureTable.
func CheckColumns(t *table.Table, sc *arrow.Schema) ([]iceberg.NestedField, error) {
	return missingColumns(t.Identifier()[len(t.Identifier())-1], t.Schema(), sc)
}

// missingColumns lists the top-level fields of sc that the table schema lacks (as Iceberg fields
// with throwaway ids; AddColumn assigns real ones), and fails on a field whose type differs.
func missingColumns(name string, tsc *iceberg.Schema, sc *arrow.Schema) ([]iceberg.NestedField, error) {
	isc, err := table.ArrowSchemaToIcebergWithFreshIDs(sc, true)
	if err != nil {
		return nil, &SchemaError{Table: name, Column: "(schema)", Have: err.Error(), Want: "types Iceberg can store"}
	}
	var missing []iceberg.NestedField
	for _, f := range isc.Fields() {
		have, ok := tsc.FindFieldByName(f.Name)
		if !ok {
			missing = append(missing, f)
			continue
		}
		if have.Type.String() != f.Type.String() {
			return nil, &SchemaError{Table: name, Column: f.Name, Have: f.Type.String(), Want: have.Type.String()}
		}
	}
	return missing, nil
}

// ArrowSchema is the table's current schema as Arrow, with Iceberg field ids as Parquet field ids,
// which is what data files must be written with.
func ArrowSchema(t *table.Table) (*arrow.Schema, error) {
	return table.SchemaToArrowSchema(t.Schema(), nil, true, false)
}
