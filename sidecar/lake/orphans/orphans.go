// Package orphans is orphan cleanup (`siglake gc`). A crash between writing a data file and
// committing it, a commit that failed cleanly after the files were written, or an expired
// snapshot leaves objects that no retained snapshot references. They cost storage, not correctness, so gc is a separate, explicit
// tool: it lists them (dry run by default) and deletes them with Apply.
//
// iceberg-go's orphan cleanup does the work (table.PlanOrphanFiles / ExecuteOrphanCleanup): it walks
// the table location and keeps everything the table metadata reaches: the current and logged
// metadata files, every snapshot's manifest list, manifests and data files, statistics files.
// On top of that, gc keeps what Options.Keep names: the Puffin index sidecars registered in
// table properties and the objects retention removed and deletes itself after its delay
// (sidecar.GCKeep: puffinidx.Referenced, pending.Referenced), which iceberg-go's walk does not read.
package orphans

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/deadline"
)

// DefaultOlderThan is the default age limit: only objects older than this are candidates. It
// must exceed the longest time between writing a file and committing it (a drain batch's
// commit retries, a rewrite), or gc could delete a file a commit is about to reference.
const DefaultOlderThan = 72 * time.Hour

// DefaultMinAge is gc's floor: an --older-than below it is refused unless the operator lowers
// the floor explicitly (--min-age-floor). Like Iceberg's remove-orphan-files, which refuses
// anything under 24 hours: a file younger than that may belong to a commit in flight (a stalled
// catalog, a long rewrite), and deleting it leaves a table whose metadata cannot be loaded.
const DefaultMinAge = 24 * time.Hour

// FileCommitAttempts is the most commit attempts any path makes with the same written files:
// the drain's batch (DefaultRetry) and a rewrite's replace (ReplaceAttempts). Paths that commit
// only properties (deletion requests, claims, marks of their own) write a new metadata file per
// attempt, so no file of theirs waits longer than one attempt.
var FileCommitAttempts = max(lake.DefaultRetry.Attempts, lake.ReplaceAttempts)

// FloorMin is the lowest floor gc accepts under commit deadline d: twice the longest the commit
// attempts of one set of files can run (FileCommitAttempts, each abandoned at d). The factor
// covers the waits between attempts and a commit abandoned at its deadline that the catalog
// applies a little later.
func FloorMin(d time.Duration) time.Duration {
	if d <= 0 {
		d = deadline.DefaultCommitTimeout
	}
	return 2 * time.Duration(FileCommitAttempts) * d
}

// HandoffMaxAge is the oldest a group-commit request may be when an attempt to commit it starts,
// under commit deadline d: FileCommitAttempts x d. Its files were written before it was sent, and
// its attempts are abandoned at d each, so a file handed to a committer is committed (if ever)
// within about 2 x FileCommitAttempts x d of its writing: inside gc's floor (FloorMin), so gc
// never deletes a file a late group commit still references.
func HandoffMaxAge(d time.Duration) time.Duration {
	if d <= 0 {
		d = deadline.DefaultCommitTimeout
	}
	return time.Duration(FileCommitAttempts) * d
}

// ErrTooYoung refuses a gc whose age limit or floor could reach a commit in flight.
var ErrTooYoung = errors.New("gc refused")

// CheckAge checks an --older-than against gc's floor (0: DefaultMinAge) and the floor against
// the commit deadline d (FloorMin).
func CheckAge(olderThan, floor, d time.Duration) error {
	if floor <= 0 {
		floor = DefaultMinAge
	}
	if d <= 0 {
		d = deadline.DefaultCommitTimeout
	}
	if lo := FloorMin(d); floor < lo {
		return fmt.Errorf("%w: --min-age-floor %s is below %s, twice the longest a commit may run under --commit-timeout %s (%d attempts; pass gc the compactor's --commit-timeout)",
			ErrTooYoung, FormatAge(floor), FormatAge(lo), FormatAge(d), FileCommitAttempts)
	}
	if olderThan < floor {
		return fmt.Errorf("%w: --older-than %s is below gc's floor of %s: younger objects may belong to a commit in flight; lower the floor only with --min-age-floor (at least %s under --commit-timeout %s)",
			ErrTooYoung, FormatAge(olderThan), FormatAge(floor), FormatAge(FloorMin(d)), FormatAge(d))
	}
	return nil
}

// FormatAge renders d in the duration syntax the options read, in its largest whole unit
// (1w, 3d, 36h, 90m, 45s), else as a Go duration.
func FormatAge(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{7 * 24 * time.Hour, "w"}, {24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if d > 0 && d%u.unit == 0 {
			return fmt.Sprintf("%d%s", d/u.unit, u.name)
		}
	}
	return d.String()
}

// Options say what gc looks at and whether it deletes.
type Options struct {
	// OlderThan: objects modified more recently are never candidates. It must be at least MinAge.
	OlderThan time.Duration
	// MinAge is the floor OlderThan must reach (CheckAge); 0 is DefaultMinAge. Lower only by
	// an operator's explicit choice.
	MinAge time.Duration
	// CommitTimeout is the commit deadline the floor must stay far above; 0 is the lake's.
	CommitTimeout time.Duration
	// Apply deletes the orphans; otherwise gc only lists them.
	Apply bool
	// Tables limits gc to these tables; empty means every table in the namespace.
	Tables []string
	// Keep returns objects of t that something other than the table metadata references (the
	// registered Puffin sidecars); they are never orphans. An error stops gc of that table: it
	// deletes nothing it cannot tell is unreferenced. Required: a caller that forgot it would
	// delete the registered sidecars (the lake cannot read their registrations itself).
	Keep func(t *table.Table) ([]string, error)
}

// Result is what gc found (and deleted) in one table.
type Result struct {
	Table   string             `json:"table"`
	Cutoff  time.Time          `json:"cutoff"`
	Orphans []table.OrphanFile `json:"orphans"` // path and size of each unreferenced object older than the cutoff
	Bytes   int64              `json:"bytes"`
	Deleted []string           `json:"deleted,omitempty"` // with Apply: the objects actually deleted
}

// Run finds (and with Apply deletes) the orphans of the lake's tables. It goes on with the next
// table after one fails and returns every table's error, joined.
func Run(ctx context.Context, l *lake.Lake, opts Options) ([]Result, error) {
	if opts.CommitTimeout <= 0 {
		opts.CommitTimeout = l.CommitTimeout()
	}
	if err := CheckAge(opts.OlderThan, opts.MinAge, opts.CommitTimeout); err != nil {
		return nil, err
	}
	if opts.Keep == nil {
		return nil, errors.New("gc: Options.Keep is required (sidecar.GCKeep keeps the registered index sidecars and pending retention deletions)")
	}
	names := opts.Tables
	if len(names) == 0 {
		var err error
		if names, err = l.ListTables(ctx); err != nil {
			return nil, err
		}
		sort.Strings(names)
	}
	var out []Result
	var errs []error
	for _, name := range names {
		r, err := gcTable(ctx, l, name, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

func gcTable(ctx context.Context, l *lake.Lake, name string, opts Options) (Result, error) {
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return Result{}, err
	}
	plan, err := t.PlanOrphanFiles(ctx, table.WithFilesOlderThan(opts.OlderThan))
	if err != nil {
		return Result{}, fmt.Errorf("gc of %s: list orphans under %s: %w", name, t.Location(), err)
	}
	keep := map[string]bool{}
	paths, err := opts.Keep(t)
	if err != nil {
		return Result{}, fmt.Errorf("gc of %s: %w (gc deletes nothing in it until then)", name, err)
	}
	for _, p := range paths {
		keep[gcPathKey(p)] = true
	}
	r := Result{Table: name, Cutoff: plan.Cutoff()}
	for _, o := range plan.OrphanFiles() {
		if !keep[gcPathKey(o.Path)] {
			r.Orphans = append(r.Orphans, o)
			r.Bytes += o.SizeBytes
		}
	}
	sort.Slice(r.Orphans, func(i, j int) bool { return r.Orphans[i].Path < r.Orphans[j].Path })
	if !opts.Apply || len(r.Orphans) == 0 {
		return r, nil
	}
	var cleanup []table.OrphanCleanupOption
	if len(r.Orphans) < len(plan.OrphanFiles()) {
		fsys, err := t.FS(ctx)
		if err != nil {
			return r, err
		}
		cleanup = append(cleanup, table.WithDeleteFunc(func(p string) error {
			if keep[gcPathKey(p)] {
				return nil
			}
			return fsys.Remove(p)
		}))
	}
	res, err := t.ExecuteOrphanCleanup(ctx, plan, cleanup...)
	for _, p := range res.DeletedFiles {
		if !keep[gcPathKey(p)] {
			r.Deleted = append(r.Deleted, p)
		}
	}
	if err != nil {
		return r, fmt.Errorf("gc of %s: delete %d orphans: %w", name, len(r.Orphans), err)
	}
	return r, nil
}

// gcPathKey spells a path the way both the orphan walk and our registrations agree on: the local
// FileIO walks plain paths while table locations say file://.
func gcPathKey(p string) string {
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		return rest
	}
	return strings.TrimPrefix(p, "file:")
}
