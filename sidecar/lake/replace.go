package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ErrInputsGone: files a replace would remove are no longer live at the table's head (another
// rewrite, retention or a delete task replaced them first). Nothing was committed.
var ErrInputsGone = errors.New("replaced files are no longer live")

// ReplaceAttempts bounds the commits of one replace: each retry follows a table that moved (a
// drain append) while the replaced files stayed live.
const ReplaceAttempts = 5

// ReplaceResult describes a CommitReplace, successful or not.
type ReplaceResult struct {
	Table *table.Table // after the commit (nil on failure)
	// MaybeCommitted is set on failure when the last attempt's outcome is unknown (not a clean
	// conflict, not a staging error), so the added files may be referenced and must be kept.
	MaybeCommitted bool
}

// CommitReplace replaces old by added in table name. The drains of every pod append to a table
// all the time, so the head a rewrite planned on has usually moved by the time its merge ends;
// an append leaves the replaced files live, and the replace is still right on the new head. So
// each attempt loads the newest metadata, stages there (staging refuses files that are no longer
// live: ErrInputsGone), lets stage add its own changes to the same commit (nil: none), and pins
// main to that head so the catalog commits it only there; a head that moved again is retried.
// After ReplaceAttempts conflicts the error satisfies IsConflict.
func (l *Lake) CommitReplace(ctx context.Context, name string, old, added []iceberg.DataFile, props iceberg.Properties,
	stage func(t *table.Table, txn *table.Transaction) error) (ReplaceResult, error) {
	var err error
	for attempt := 1; attempt <= ReplaceAttempts; attempt++ {
		var res ReplaceResult
		var again bool
		if res, again, err = l.replaceAttempt(ctx, name, old, added, props, stage); !again {
			return res, err
		}
	}
	return ReplaceResult{}, err
}

// replaceAttempt is one load, stage and commit of CommitReplace under the table's lock; again:
// the commit conflicted and the next attempt may stage on the newer head.
func (l *Lake) replaceAttempt(ctx context.Context, name string, old, added []iceberg.DataFile, props iceberg.Properties,
	stage func(t *table.Table, txn *table.Transaction) error) (ReplaceResult, bool, error) {
	defer l.lockTable(name)()
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return ReplaceResult{}, false, err
	}
	txn := t.NewTransaction()
	if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
		return ReplaceResult{}, false, err
	}
	if err := txn.ReplaceDataFilesWithDataFiles(ctx, old, added, props); err != nil {
		if strings.Contains(err.Error(), "do not belong to the table") {
			return ReplaceResult{}, false, fmt.Errorf("%w: %v", ErrInputsGone, err)
		}
		return ReplaceResult{}, false, fmt.Errorf("stage replace in %s: %w", name, err)
	}
	if stage != nil {
		if err := stage(t, txn); err != nil {
			return ReplaceResult{}, false, fmt.Errorf("stage replace in %s: %w", name, err)
		}
	}
	nt, err := txn.Commit(ctx)
	if err == nil {
		return ReplaceResult{Table: nt}, false, nil
	}
	if !IsConflict(err) {
		// Never retried: an unknown outcome may have landed, and a refusal will not change.
		return ReplaceResult{MaybeCommitted: IsCommitStateUnknown(err)}, false, err
	}
	return ReplaceResult{}, true, err
}
