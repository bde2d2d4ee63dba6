package sweep

import (
	"context"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/filtered"
)

// RewriteFile runs the sweeper's one-file rewrite of df for the external tests: the snapshot
// committed, the rows deleted, the outputs written.
func RewriteFile(s *Sweeper, ctx context.Context, t *table.Table, df iceberg.DataFile, matched []deletes.Request, _ *zap.Logger) (int64, int64, int, error) {
	src, err := filtered.Open(ctx, t)
	if err != nil {
		return 0, 0, 0, err
	}
	out := s.rewrite(ctx, src, fileOf(df), matched)
	if err := out.Error(); err != nil {
		return 0, 0, 0, rewriteError(fileOf(df), err)
	}
	return out.SnapshotID, filtered.Removed(out.Merge), len(out.Merge.Outputs), nil
}

// PartitionOf exposes the partition a data file path names.
var PartitionOf = partitionOf

// SetStaged sets the hook a delete-task rewrite's commit step runs after staging.
func SetStaged(s *Sweeper, f func()) { s.staged = f }

// SetVetted sets the hook a sweep runs each time it has read and vetted the requests.
func SetVetted(s *Sweeper, f func()) { s.vetted = f }

// SetChecked sets the hook the done marks run between their check and their commit.
func SetChecked(s *Sweeper, f func()) { s.checked = f }
