package lake

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake/backoff"
	"github.com/siglake/siglake/sidecar/lake/catalogs"
	"github.com/siglake/siglake/sidecar/lake/deadline"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

// Outcome says what CommitAppend did.
type Outcome string

const (
	Committed        Outcome = "committed"
	AlreadyCommitted Outcome = "already_committed" // an earlier attempt committed it; its response was lost
)

// ErrMarkAhead means the table holds part of a batch but not all of it: another process writes the
// same stream. Committing would duplicate rows, so the drain stops on this stream instead.
var ErrMarkAhead = errors.New("stream mark is inside the batch: another writer commits this stream")

// AppendRequest is one drain commit: files that hold segments first..last of a stream.
type AppendRequest struct {
	Table       string
	Files       []iceberg.DataFile
	Stream      string
	First, Last marks.Mark
	// Summary goes into the snapshot summary (segment counts, rows) for people reading history.
	Summary iceberg.Properties
	// Fence, if set, is asked right before every commit attempt; an error stops the retries
	// with that error (a catalog claim whose holder may no longer start commits).
	Fence func() error
}

// CommitResult describes a successful CommitAppend.
type CommitResult struct {
	Outcome    Outcome
	SnapshotID int64
	Attempts   int
	// Prev is the stream's mark the commit replaced (zero when the stream had none): the segments
	// of the commit are exactly those of the stream above Prev up to Last.
	Prev marks.Mark
	// MaybeCommitted is set on failure when some attempt's outcome is unknown (not a clean
	// conflict), so the files may be referenced and must not be deleted.
	MaybeCommitted bool
}

// Retry bounds CommitAppend's own retries; the drain keeps the batch and tries again later after that.
// The k-th retry waits between MinWait·2^(k-1) and MinWait·2^k, never more than MaxWait (backoff.Policy).
type Retry struct {
	Attempts int
	MinWait  time.Duration // least wait, before the first retry
	MaxWait  time.Duration // most wait, before any retry
}

// Backoff is the retries' policy: doubling, with equal jitter so concurrent committers on one
// table do not retry in lockstep. Its ceiling starts at 2·MinWait, so the first retry waits at
// least MinWait.
func (r Retry) Backoff() backoff.Policy {
	return backoff.Policy{Min: 2 * r.MinWait, Max: r.MaxWait, Factor: 2, Jitter: backoff.EqualJitter}
}

// DefaultRetry is what the drain uses.
var DefaultRetry = Retry{Attempts: 6, MinWait: 100 * time.Millisecond, MaxWait: 5 * time.Second}

// CommitAppend appends req.Files and moves the stream's mark to req.Last in ONE commit: the
// one-request case of CommitGroup, with its mark rules, retries and errors.
//
// Before every attempt it reloads the table and re-reads the mark: if the mark already reached
// req.Last, an earlier attempt committed (its response was lost) and nothing is appended again.
// That re-read is what makes a retry after an unknown outcome safe.
func (l *Lake) CommitAppend(ctx context.Context, req AppendRequest, retry Retry) (CommitResult, error) {
	res, _ := l.CommitGroup(ctx, GroupCommit{Table: req.Table, Summary: req.Summary, Fence: req.Fence,
		Items: []GroupItem{{Stream: req.Stream, First: req.First, Last: req.Last,
			Files: func(*table.Table) ([]iceberg.DataFile, error) { return req.Files, nil }}}}, retry)
	it := res.Items[0]
	return CommitResult{Outcome: it.Outcome, SnapshotID: it.SnapshotID, Attempts: res.Attempts, Prev: it.Prev,
		MaybeCommitted: it.MaybeCommitted}, it.Err
}

// IsConflict reports whether a commit error is a definite conflict: the catalog refused the
// commit because the table changed, so nothing was committed and retrying on fresh metadata is
// safe. iceberg-go wraps CAS failures in table.ErrCommitFailed, and so does its REST client's
// answer to a 409 CommitFailedException (rest.ErrCommitFailed wraps it), but its SQL catalog
// returns a failed requirement (the branch moved before the update) as a plain error, recognised
// by its text. The other side, a commit that may have landed, is IsCommitStateUnknown.
func IsConflict(err error) bool {
	if errors.Is(err, rest.ErrCommitStateUnknown) {
		// A REST 5xx whose message happens to quote a failed requirement is still unknown.
		return false
	}
	return errors.Is(err, table.ErrCommitFailed) || errors.Is(err, table.ErrCommitDiverged) ||
		strings.Contains(err.Error(), "requirement failed:")
}

// IsCommitStateUnknown reports whether a failed commit may have been applied all the same: the
// catalog said it does not know (a REST 500, 502, 503 or 504 on a commit, which iceberg-go's REST
// client returns as rest.ErrCommitStateUnknown) or no answer came at all (a connection cut after
// the request went out, a timeout). Such a commit is never retried blindly: the retry first
// re-reads what the commit would have changed (CommitAppend re-reads the stream mark), and the
// files it references are kept.
//
// Not unknown: a conflict (IsConflict: nothing committed), a catalog with no connection left
// (catalogs.IsFull: refused before any statement), and a definite refusal (the catalog
// answered 400, 401, 403, 404, 419 or 501: it did not apply the request). Everything else counts as
// unknown, so an error this does not recognise is treated as the dangerous case.
func IsCommitStateUnknown(err error) bool {
	if err == nil || IsConflict(err) || errors.Is(err, deadline.ErrAbandonedInFlight) { // never sent
		return false
	}
	if catalogs.IsFull(err) { // refused at connection, before any statement
		return false
	}
	if errors.Is(err, rest.ErrCommitStateUnknown) {
		return true
	}
	for _, refusal := range []error{rest.ErrBadRequest, rest.ErrUnauthorized, rest.ErrForbidden,
		rest.ErrAuthorizationExpired, rest.ErrEndpointNotSupported, iceberg.ErrNotImplemented,
		catalog.ErrNoSuchTable, catalog.ErrNoSuchNamespace} {
		if errors.Is(err, refusal) {
			return false
		}
	}
	return true
}
