package sidecar

// The one-shot subcommands that run a loop's work with the process's options.

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/retention/pending"
)

// useCodecs makes cfg's Parquet codecs those of every sink and k-way merge of the process: the
// compactor's loops and the one-shot subcommands that rewrite files (delete-sweep, retention).
func useCodecs(cfg config.Config) {
	writer.SetDefaultEncoder(cfg.MergeParquetEncoder)
	merge.SetDefaultDecoder(cfg.MergeParquetDecoder)
}

// DeleteSweep is `siglake delete-sweep` (sweep.Sweeper.SweepTables) with this process's
// options: its rewrites get the same index rebuild as the maintenance loop's.
func DeleteSweep(ctx context.Context, l *lake.Lake, cfg config.Config, log *zap.Logger, tables []string, o sweep.Options) ([]sweep.Report, error) {
	return DeleteSweeper(l, cfg, log).SweepTablesWith(ctx, tables, o)
}

// DeleteSweeper is the sweeper of `siglake delete-sweep` and of delete-request's count of what a
// request matches: the process's options, metrics nobody scrapes.
func DeleteSweeper(l *lake.Lake, cfg config.Config, log *zap.Logger) *sweep.Sweeper {
	useCodecs(cfg)
	m := &maintain.Maintainer{Cfg: MaintainConfig(cfg), Lake: l, Metrics: NewMetrics().Maintain, Log: log, Now: time.Now}
	return m.Deletes()
}

// RetentionRunner is the retention of `siglake retention`: the process's options, the
// maintainer's executor, metrics nobody scrapes.
func RetentionRunner(l *lake.Lake, cfg config.Config, log *zap.Logger) *retention.Runner {
	useCodecs(cfg)
	m := &maintain.Maintainer{Cfg: MaintainConfig(cfg), Lake: l, Metrics: NewMetrics().Maintain, Log: log, Now: time.Now}
	return m.Retention()
}

// GCKeep is what `siglake gc` keeps beyond the table metadata: the registered Puffin index
// sidecars, and the objects retention removed and deletes itself after the delete delay.
func GCKeep(t *table.Table) ([]string, error) {
	idx, err := puffinidx.Referenced(t)
	if err != nil {
		return nil, err
	}
	removed, err := pending.Referenced(t)
	if err != nil {
		return nil, fmt.Errorf("pending retention deletions: %w", err)
	}
	return append(idx, removed...), nil
}
