package demo

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/walgen"
)

// prepareRollup creates walgen's per-minute rollup table and stores its fold specification, so
// the demo's sidecar folds the partial rows walgen writes into it.
func prepareRollup(ctx context.Context, cfg config.Config) error {
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		return err
	}
	defer l.Close()
	if _, err := l.EnsureTable(ctx, walgen.RollupTable, walgen.RollupSchema); err != nil {
		return err
	}
	_, err = fold.Set(ctx, l, walgen.RollupTable, fold.Builtin)
	return err
}

// rollupSummary shows the rollup's rows before folding (the partial rows sealed) and after.
// The rollup's sum(events) must equal the events rows sealed: folding keeps the counts.
func rollupSummary(ctx context.Context, out io.Writer, cfg config.Config, dir string, sealed, events int64) error {
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		return err
	}
	defer l.Close()
	t, err := l.LoadTable(ctx, walgen.RollupTable)
	if err != nil {
		return err
	}
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return err
	}
	// Listed like the other tables' files, so DuckDB can check the rollup's sum(events).
	list := demoLiveFileList(dir, walgen.RollupTable)
	if err := writeLiveFileList(list, files); err != nil {
		return err
	}
	var rows, bytes int64
	for _, f := range files {
		rows += f.Rows
		bytes += f.Size
	}
	counted, err := sumEvents(ctx, t)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s, the per-minute rollup (%s): %d partial rows sealed, %d rows after folding in %d files (%s); sum(events) %d, events rows sealed %d: %v\n",
		walgen.RollupTable, fold.Builtin.Describe(), sealed, rows, len(files), sidecar.HumanBytes(bytes), counted, events, counted == events)
	fmt.Fprintf(out, "Check it with DuckDB over the rollup's live files (listed in %s):\n  %s\n", list,
		shellDuckDB(overLiveFiles(list, "sum(events)")))
	fmt.Fprintf(out, "Dashboards still GROUP BY (folding is eventual): SELECT time_bucket(INTERVAL 5 MINUTE, timestamp) AS t, service, sum(events), sum(bytes) ... GROUP BY ALL\n")
	if counted != events {
		return fmt.Errorf("the rollup counts %d events, %d were sealed", counted, events)
	}
	return nil
}

// sumEvents is sum(events) over t, read through iceberg-go.
func sumEvents(ctx context.Context, t *table.Table) (int64, error) {
	_, recs, err := t.Scan(table.WithSelectedFields("events")).ToArrowRecords(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for rec, err := range recs {
		if err != nil {
			return 0, err
		}
		col := rec.Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			n += col.Value(i)
		}
		rec.Release()
	}
	return n, nil
}
