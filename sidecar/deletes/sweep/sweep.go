// Package sweep is the delete-task sweeper: it executes the deletion requests (package deletes)
// recorded in tables, examining candidate files and rewriting them without the matching rows
// through the filtered rewriter, and publishes each table's deletion state. A request on a rollup
// table that tests a non-key column is refused here as where it is recorded (fold.CheckDelete).
package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/filtered"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/rows"
)

// Sweeper executes the deletion requests recorded in tables (docs/deletes.md): candidate
// files come from Iceberg scan planning with the requests' row filter; each candidate with
// matching rows is rewritten once without them (generation 0) and replaced in a validated commit
// that also updates the requests' progress. A request is done when a sweep finds no live file
// with rows it matches.
type Sweeper struct {
	// Rewriter runs the delete-task rewrites. Its Executor's AfterCommit is the Puffin index
	// rebuild under SIGLAKE_INDEX_REBUILD (a delete-task rewrite writes generation 0, often
	// streamed, so its outputs lack footer indexes like any streamed rewrite's); its OnFailure is
	// the maintainer's set-aside accounting; its Log is the sweeper's too.
	filtered.Rewriter
	Cfg     Config
	Lake    *lake.Lake
	Metrics *Metrics
	// Publish receives each table's deletion state; nil publishes nothing.
	Publish Publisher
	Now     func() time.Time
	// clean remembers (file, request) pairs known to have no matching row. Data files never
	// change, so this holds until the file is replaced; it lets a capped sweep move on to files
	// it has not examined instead of reading the same clean ones every time.
	clean map[string]bool
	// published is the last state published per table (a look without a sweep keeps its sweep).
	// publishMu guards it: maintenance publishes pending requests (Pending) while a sweep by
	// another caller of the same Sweeper may publish its own.
	publishMu sync.Mutex
	published map[string]*State
	// vetted, when set (tests), runs each time the sweep has read and vetted the requests.
	vetted func()
	// staged, when set (tests), runs in a delete-task rewrite's commit step after it read the
	// newest metadata and staged the progress, before the catalog commit.
	staged func()
	// checked, when set (tests), runs when the done marks' check passed on the newest metadata,
	// before their commit.
	checked func()
}

// Config is what the sweeper is told; the process maps its options onto it.
type Config struct {
	// MaxFiles and MaxBytes cap one sweep of a table (SIGLAKE_DELETE_SWEEP_MAX_FILES,
	// SIGLAKE_DELETE_SWEEP_MAX_MB), so a big request cannot starve the drain.
	MaxFiles int
	MaxBytes int64
	// TargetFileBytes splits a rewrite's output (at least the input's size: a delete task never
	// splits a file for size alone).
	TargetFileBytes int64
	// Sweeps is SIGLAKE_DELETE_TASKS, shown in the state: whether idle cycles sweep at all.
	Sweeps bool
	// Metadata is the search metadata a rewrite's output carries.
	Metadata lake.MetadataFunc
	// CancelPeriod is SIGLAKE_DELETE_CANCEL_PERIOD: a request is executed only once this long has
	// passed since it was recorded, so a mistaken one can be withdrawn (siglake delete-cancel). 0
	// executes at once.
	CancelPeriod time.Duration
}

// Options say how one sweep runs.
type Options struct {
	// Apply rewrites files and marks requests done; without it the sweep only reports
	// candidates and matching rows (siglake delete-sweep without --apply).
	Apply bool
	// NoCaps examines every candidate (the dry run); otherwise SIGLAKE_DELETE_SWEEP_MAX_FILES
	// and SIGLAKE_DELETE_SWEEP_MAX_MB bound the sweep.
	NoCaps bool
	// SkipCancelPeriod executes requests still inside their cancel period (delete-sweep --apply
	// --skip-cancel-period); a dry run counts them either way.
	SkipCancelPeriod bool
	// Only, when set, limits the sweep to these request ids (delete-request's count of what the
	// request it recorded matches).
	Only []string
}

// Report says what one sweep of a table found and did.
type Report struct {
	Table      string            `json:"table"`
	Requests   []deletes.Request `json:"requests"` // every request, as stored after the sweep
	Invalid    []string          `json:"invalid,omitempty"`
	Candidates []CandidateFile   `json:"candidates"`
	Outcome    string            `json:"outcome"`
	Rewritten  int               `json:"rewritten"`
	Deleted    int64             `json:"rows_deleted"`
	Done       []string          `json:"done,omitempty"`
	Capped     bool              `json:"capped,omitempty"`
	Conflicts  int               `json:"conflicts,omitempty"`
	// SetAside candidates were not read: set aside after failed rewrites. Their requests stay
	// pending.
	SetAside int `json:"set_aside,omitempty"`
	// Waiting are the pending requests an applying sweep left alone: inside their cancel period.
	Waiting   []string         `json:"waiting,omitempty"`
	ByRequest map[string]int64 `json:"matching_rows_by_request,omitempty"`
	Snapshots []int64          `json:"snapshot_ids,omitempty"` // of the committed rewrites
	examined  int
	pending   []deletes.Request
	// done are the requests this sweep marked done, as stored, for the observer.
	done []deletes.Request
}

// CandidateFile is a file scan planning could not rule out for some pending request.
type CandidateFile struct {
	Path     string           `json:"path"`
	Bytes    int64            `json:"bytes"`
	Rows     int64            `json:"rows"`
	Matching map[string]int64 `json:"matching_rows,omitempty"` // by request id; absent = not examined
	Result   string           `json:"result"`
}

// partitionOf is the partition of a data file from its directory (`.../timestamp_day=2026-11-29/`),
// for logs; "" when the path does not say.
func partitionOf(path string) string {
	dir := path[:max(strings.LastIndex(path, "/"), 0)]
	if _, v, ok := strings.Cut(dir[strings.LastIndex(dir, "/")+1:], "="); ok {
		return v
	}
	return ""
}

func (s *Sweeper) cleanKey(file, id string) string { return file + "\x00" + id }

// trimClean forgets files that are no longer candidates (rewritten, expired by retention, or
// ruled out by planning): only candidates are ever marked clean, so the rest is dead weight that
// would grow with every file a long-pending request has seen.
func (s *Sweeper) trimClean(tasks []table.FileScanTask) {
	live := make(map[string]bool, len(tasks))
	for _, task := range tasks {
		live[task.File.FilePath()] = true
	}
	for k := range s.clean {
		if file, _, _ := strings.Cut(k, "\x00"); !live[file] {
			delete(s.clean, k)
		}
	}
}

// Sweep runs one delete sweep of table name: read the requests, plan the candidate files,
// examine (and, applying, rewrite) them, mark done the requests no live file matches. It records
// nothing itself: its report goes to the observer.
func (s *Sweeper) Sweep(ctx context.Context, name string, o Options) (rep Report, err error) {
	rep.Table = name
	if s.clean == nil {
		s.clean = map[string]bool{}
	}
	defer func() {
		stopped := membudget.IsStopping(ctx, err)
		switch {
		case stopped: // a shutdown (a rewrite waiting for memory, say) is no failed sweep
			rep.Outcome = ""
		case err != nil:
			rep.Outcome = "failed"
		}
		s.observe(o, rep, err, stopped)
	}()
	t, err := s.Lake.LoadTable(ctx, name)
	if err != nil {
		return rep, err
	}
	w := &sweep{Sweeper: s, o: o, rep: &rep}
	w.requests(t)
	if len(rep.pending) == 0 || t.CurrentSnapshot() == nil {
		return rep, nil
	}
	if err := w.files(ctx, t); err != nil {
		return rep, err
	}
	// markDone decides per request: one whose candidates include a set-aside file is never found
	// clean there, so it stays pending; the others can be done.
	if o.Apply && !rep.Capped && rep.Conflicts == 0 && ctx.Err() == nil {
		if err := w.markDone(ctx); err != nil {
			return rep, err
		}
	}
	// Report what is stored now.
	if t, err := s.Lake.LoadTable(ctx, name); err == nil {
		rep.Requests, _ = deletes.List(t.Properties())
	}
	return rep, nil
}

// sweep is one sweep of a table under way: what its steps share.
type sweep struct {
	*Sweeper
	o   Options
	rep *Report
	src filtered.Source
}

// requests reads t's requests into the report and keeps, as the sweep's pending ones, those it
// executes: valid, among o.Only when set, and (applying) past their cancel period.
func (w *sweep) requests(t *table.Table) {
	all, bad := deletes.List(t.Properties())
	pending, invalid := w.executable(t, all)
	for _, e := range append(bad, invalid...) {
		w.rep.Invalid = append(w.rep.Invalid, e.Error())
	}
	w.rep.Requests = all
	if w.o.Only != nil {
		pending = slices.DeleteFunc(pending, func(r deletes.Request) bool { return !slices.Contains(w.o.Only, r.ID) })
	}
	if w.o.Apply && !w.o.SkipCancelPeriod {
		var due []deletes.Request
		for _, r := range pending {
			if w.waiting(r) {
				w.rep.Waiting = append(w.rep.Waiting, r.ID)
				continue
			}
			due = append(due, r)
		}
		pending = due
	}
	w.rep.pending = pending
}

// files plans the candidate files of the pending requests, examines those the planner picks and
// sets the outcome.
func (w *sweep) files(ctx context.Context, t *table.Table) error {
	tasks, err := w.candidates(ctx, t)
	if err != nil {
		return err
	}
	cands := make([]plan.DeleteCandidate, len(tasks))
	for i, task := range tasks {
		cands[i] = plan.DeleteCandidate{Path: task.File.FilePath(), Bytes: task.File.FileSizeBytes()}
		for _, r := range w.rep.pending {
			if w.o.NoCaps || !w.clean[w.cleanKey(cands[i].Path, r.ID)] {
				cands[i].Open = append(cands[i].Open, r.ID)
			}
		}
	}
	// Which candidates this sweep examines is the planner's decision.
	dp := plan.PlanDeletes(cands, plan.DeleteCaps{MaxFiles: w.Cfg.MaxFiles, MaxBytes: w.Cfg.MaxBytes, NoCaps: w.o.NoCaps})
	w.rep.Capped = dp.Capped
	if err := w.examineAll(ctx, tasks, dp.Picks); err != nil {
		return err
	}
	switch {
	case w.rep.Rewritten > 0:
		w.rep.Outcome = "deleted"
	case w.rep.Conflicts > 0:
		w.rep.Outcome = "conflict"
	case w.rep.Capped:
		w.rep.Outcome = "capped"
	default:
		w.rep.Outcome = "clean"
	}
	return nil
}

// candidates are the live files scan planning cannot rule out for some pending request, one per
// data file however many row-group ranges planning split it into. A set-aside file (siglake
// skipped list) is never read: it takes no part in the planning (so it uses up no cap) and is
// reported; the requests it may hold rows of stay pending.
func (w *sweep) candidates(ctx context.Context, t *table.Table) ([]table.FileScanTask, error) {
	expr, err := rows.AnyExpr(filters(w.rep.pending), t.Schema(), lake.TimestampColumn)
	if err != nil {
		return nil, err
	}
	tasks, err := lake.PlanDataFiles(ctx, t, expr)
	if err != nil {
		return nil, fmt.Errorf("plan candidate files of %s: %w", w.rep.Table, err)
	}
	w.trimClean(tasks)
	if w.src, err = filtered.Open(ctx, t); err != nil {
		return nil, err
	}
	w.rep.ByRequest = map[string]int64{}
	kept, aside := filtered.SetAside(t.Properties(), tasks, func(task table.FileScanTask) string { return task.File.FilePath() })
	for _, task := range aside {
		df := task.File
		w.rep.Candidates = append(w.rep.Candidates, CandidateFile{Path: df.FilePath(), Bytes: df.FileSizeBytes(), Rows: df.Count(),
			Result: "not examined: set aside after failed rewrites (siglake skipped list)"})
		w.rep.SetAside++
	}
	return kept, nil
}

// examineAll examines each candidate the planner picked, in order, and reports every candidate.
func (w *sweep) examineAll(ctx context.Context, tasks []table.FileScanTask, picks []plan.DeletePick) error {
	byID := map[string]deletes.Request{}
	for _, r := range w.rep.pending {
		byID[r.ID] = r
	}
	var firstErr error
	for i, pick := range picks {
		df := tasks[i].File
		c := CandidateFile{Path: df.FilePath(), Bytes: df.FileSizeBytes(), Rows: df.Count(), Result: pick.Reason}
		switch {
		case pick.Action != plan.DeleteExamine:
		case ctx.Err() != nil:
			c.Result = "not examined: shutting down"
		default:
			w.rep.examined++
			open := make([]deletes.Request, len(pick.Requests))
			for j, id := range pick.Requests {
				open[j] = byID[id]
			}
			if err := w.examine(ctx, fileOf(df), open, &c); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		w.rep.Candidates = append(w.rep.Candidates, c)
	}
	return firstErr
}

// fileOf is a candidate data file as the rewrite executor takes it.
func fileOf(df iceberg.DataFile) lake.File {
	gen, _ := merge.ParseGeneration(df.FilePath())
	return lake.File{Path: df.FilePath(), Partition: partitionOf(df.FilePath()), Size: df.FileSizeBytes(), Rows: df.Count(),
		Generation: gen, DataFile: df}
}

// waiting says whether r is still inside its cancel period: before the later of its stored
// execution time and its creation plus this sweeper's period. A request that stores none, or
// stores its creation (recorded with a period of 0), swept with a period of 0, never waits,
// whatever the clocks of the recorder and the sweeper say.
func (s *Sweeper) waiting(r deletes.Request) bool {
	if s.Cfg.CancelPeriod <= 0 && (r.NotBefore == nil || !r.NotBefore.After(r.CreatedAt)) {
		return false
	}
	return s.Now().Before(r.ExecuteAt(s.Cfg.CancelPeriod))
}

// executable is the pending requests of rs that a sweep of t runs: valid against t's schema and,
// on a rollup table, testing its key columns only (fold.CheckDelete: another tool may have stored
// it); an error for each of the others, which is reported and never executed.
func (s *Sweeper) executable(t *table.Table, rs []deletes.Request) ([]deletes.Request, []error) {
	pending, invalid := deletes.Executable(deletes.PendingOf(rs), t.Schema(), lake.TimestampColumn)
	ok := pending[:0:0]
	for _, r := range pending {
		if err := fold.CheckDelete(t.Properties(), r); err != nil {
			invalid = append(invalid, fmt.Errorf("table property %s: %w", deletes.Key(r.ID), err))
			continue
		}
		ok = append(ok, r)
	}
	if s.vetted != nil {
		s.vetted()
	}
	return ok, invalid
}

// examine counts a candidate's matching rows per open request and, when applying, rewrites it
// without them.
func (w *sweep) examine(ctx context.Context, f lake.File, open []deletes.Request, c *CandidateFile) error {
	filter, err := rows.RowFilter(filters(open))
	if err != nil {
		return err
	}
	per, err := w.Count(ctx, w.src, filtered.Read{Kind: level.KindDeleteTask.String(), File: f, Filter: filter}, true)
	if err != nil {
		c.Result = "failed: " + err.Error()
		return fmt.Errorf("count matching rows of %s: %w", c.Path, err)
	}
	c.Matching = map[string]int64{}
	var matched []deletes.Request
	for i, r := range open {
		c.Matching[r.ID] = per[i]
		w.rep.ByRequest[r.ID] += per[i]
		if per[i] == 0 {
			if w.o.Apply || w.o.NoCaps {
				w.clean[w.cleanKey(c.Path, r.ID)] = true
			}
			continue
		}
		matched = append(matched, r)
	}
	switch {
	case len(matched) == 0:
		c.Result = "no matching rows: not rewritten"
		return nil
	case !w.o.Apply:
		c.Result = "would rewrite (dry run)"
		return nil
	}
	out := w.rewrite(ctx, w.src, f, matched)
	switch err := out.Error(); {
	case err == nil:
		c.Result = fmt.Sprintf("rewritten into %d files, snapshot %d", len(out.Merge.Outputs), out.SnapshotID)
		w.rep.Rewritten++
		w.rep.Deleted += filtered.Removed(out.Merge)
		w.rep.Snapshots = append(w.rep.Snapshots, out.SnapshotID)
		return nil
	case errors.Is(err, rewrite.ErrConflict):
		c.Result = "conflict: " + rewriteError(f, err).Error()
		w.rep.Conflicts++
		return nil
	default:
		c.Result = "failed: " + rewriteError(f, err).Error()
		return rewriteError(f, err)
	}
}

func rewriteError(f lake.File, err error) error {
	return fmt.Errorf("delete-task rewrite of %s: %w", f.Path, err)
}

// rewrite writes f without the rows of matched and commits the replace together with the
// requests' progress, through the filtered rewriter. The commit pins the branch head it read (so
// progress written by someone else is never overwritten) and is retried on fresh metadata while
// f is still live.
func (s *Sweeper) rewrite(ctx context.Context, src filtered.Source, f lake.File, matched []deletes.Request) rewrite.Outcome {
	filter, err := rows.RowFilter(filters(matched))
	if err != nil {
		return rewrite.Outcome{Status: rewrite.Failed, Err: err}
	}
	ids := make([]string, len(matched))
	for i, r := range matched {
		ids[i] = r.ID
	}
	return s.Rewrite(ctx, src, filtered.Rewrite{
		Read:            filtered.Read{Kind: level.KindDeleteTask.String(), File: f, Filter: filter},
		Generation:      0,
		TargetFileBytes: s.Cfg.TargetFileBytes,
		Metadata:        s.Cfg.Metadata,
		DeleteTask:      true,
		Reason:          "deletion requests " + strings.Join(ids, ","),
		Props: func(res merge.RewriteResult) iceberg.Properties {
			return iceberg.Properties{tableprops.SumDeleteRequests: strings.Join(ids, ","), tableprops.SumDeleteRows: fmt.Sprint(filtered.Removed(res))}
		},
		// Progress goes on top of what the table holds at the commit, in the same commit.
		Stage: func(res merge.RewriteResult, cur *table.Table, txn *table.Transaction) error {
			return s.stageProgress(matched, res, cur, txn)
		},
		RowsField: "rows_deleted",
		Fields:    []zap.Field{zap.Strings("request_ids", ids)},
	})
}

// stageProgress adds a rewrite's rows and file to each matched request, as stored at the commit.
func (s *Sweeper) stageProgress(matched []deletes.Request, res merge.RewriteResult, cur *table.Table, txn *table.Transaction) error {
	stored, _ := deletes.List(cur.Properties())
	byID := map[string]deletes.Request{}
	for _, r := range stored {
		byID[r.ID] = r
	}
	var upd []deletes.Request
	for i, r := range matched {
		sr, ok := byID[r.ID]
		switch {
		case !ok:
			// Removed, or no longer a request that decodes, since the sweep read it: nobody asks
			// for these rows to go any more. A conflict commits nothing and removes the outputs;
			// the next sweep plans without it.
			return fmt.Errorf("%w: deletion request %s is gone from the table properties", table.ErrCommitFailed, r.ID)
		case sr.State != deletes.Pending:
			// Cancelled (or changed) since the sweep read it: the same.
			return fmt.Errorf("%w: deletion request %s is %s now", table.ErrCommitFailed, r.ID, sr.State)
		}
		sr.RowsDeleted += res.Deleted[i]
		sr.FilesRewritten++
		upd = append(upd, sr)
	}
	if err := deletes.Stage(txn, upd...); err != nil {
		return err
	}
	if s.staged != nil {
		s.staged()
	}
	return nil
}

// markDone marks done each pending request that every candidate of this sweep was clean for,
// after checking again on the table's newest metadata (rows appended since the sweep planned
// must be examined first). The check and the commit, pinned to that metadata's branch head, run
// under the table's lock in this process (lake.Locked), so its own drain and group commits wait
// rather than move the table in between; another process's commit can, and then it is retried
// a few times, then left to the next sweep.
func (w *sweep) markDone(ctx context.Context) error {
	for attempt := 0; attempt < 4; attempt++ {
		var done []deletes.Request
		committed := false
		err := w.Lake.Locked(w.rep.Table, func() error {
			t, err := w.Lake.LoadTable(ctx, w.rep.Table)
			if err != nil {
				return err
			}
			stored, _ := deletes.List(t.Properties())
			if done, err = w.doneOn(ctx, t, stored); err != nil || len(done) == 0 {
				return err
			}
			if w.checked != nil {
				w.checked()
			}
			committed, err = w.commitDone(ctx, t, stored, done)
			return err
		})
		if err != nil || len(done) == 0 {
			return err
		}
		if !committed {
			continue
		}
		for _, r := range done {
			w.rep.Done = append(w.rep.Done, r.ID)
			w.rep.done = append(w.rep.done, r)
			for k := range w.clean {
				if strings.HasSuffix(k, "\x00"+r.ID) {
					delete(w.clean, k)
				}
			}
		}
		return nil
	}
	return nil // the table kept moving: the next sweep checks again
}

// doneOn is the requests of this sweep that no live file of t holds a row of any more: every
// candidate scan planning finds on t was found clean.
func (w *sweep) doneOn(ctx context.Context, t *table.Table, stored []deletes.Request) ([]deletes.Request, error) {
	pending, _ := w.executable(t, stored)
	var done []deletes.Request
	for _, r := range pending {
		if slices.Contains(w.rep.Waiting, r.ID) || w.rep.pending != nil && !slices.ContainsFunc(w.rep.pending, func(p deletes.Request) bool { return p.ID == r.ID }) {
			continue // not part of this sweep (waiting out its cancel period, or recorded since)
		}
		expr, err := r.Filter().Expr(t.Schema(), lake.TimestampColumn)
		if err != nil {
			return nil, err
		}
		tasks, err := lake.PlanDataFiles(ctx, t, expr)
		if err != nil {
			return nil, fmt.Errorf("plan candidate files of %s: %w", w.rep.Table, err)
		}
		if slices.ContainsFunc(tasks, func(task table.FileScanTask) bool { return !w.clean[w.cleanKey(task.File.FilePath(), r.ID)] }) {
			continue
		}
		now := w.Now().UTC()
		r.State, r.DoneAt = deletes.Done, &now
		if snap := t.CurrentSnapshot(); snap != nil {
			r.DoneSnapshotID = snap.SnapshotID
		}
		done = append(done, r)
	}
	return done, nil
}

// commitDone stores done on t's branch head; false when the head moved first. Done and cancelled
// requests past their retention leave the table metadata in the same commit, so the metadata
// every later commit rewrites does not grow with every request ever made.
func (w *sweep) commitDone(ctx context.Context, t *table.Table, stored, done []deletes.Request) (bool, error) {
	txn := t.NewTransaction()
	if err := txn.AssertRefSnapshotID(""); err != nil {
		return false, err
	}
	if err := deletes.Stage(txn, done...); err != nil {
		return false, err
	}
	var expired []string
	for _, r := range stored {
		if r.Expired(w.Now()) {
			expired = append(expired, deletes.Key(r.ID))
		}
	}
	if len(expired) > 0 {
		if err := txn.RemoveProperties(expired); err != nil {
			return false, err
		}
	}
	if _, err := txn.Commit(ctx); err != nil {
		if lake.IsConflict(err) {
			return false, nil
		}
		return false, fmt.Errorf("mark deletion requests done in %s: %w", w.rep.Table, err)
	}
	return true, nil
}

// SweepTables is `siglake delete-sweep`: without apply, one uncapped dry run per table (requests,
// candidate files, matching rows); with apply, sweeps each table until no request is pending or
// a sweep makes no progress, whatever SIGLAKE_DELETE_TASKS says. tables empty = every table.
func (s *Sweeper) SweepTables(ctx context.Context, tables []string, apply bool) ([]Report, error) {
	return s.SweepTablesWith(ctx, tables, Options{Apply: apply})
}

// SweepTablesWith is SweepTables with o's Apply and SkipCancelPeriod.
func (s *Sweeper) SweepTablesWith(ctx context.Context, tables []string, o Options) ([]Report, error) {
	apply := o.Apply
	if len(tables) == 0 {
		var err error
		if tables, err = s.Lake.ListTables(ctx); err != nil {
			return nil, err
		}
	}
	var out []Report
	for _, name := range tables {
		if !apply {
			rep, err := s.Sweep(ctx, name, Options{NoCaps: true})
			out = append(out, rep)
			if err != nil {
				return out, err
			}
			continue
		}
		for i := 0; ctx.Err() == nil; i++ {
			rep, err := s.Sweep(ctx, name, Options{Apply: true, SkipCancelPeriod: o.SkipCancelPeriod})
			out = append(out, rep)
			if err != nil {
				return out, err
			}
			progress := rep.Rewritten > 0 || len(rep.Done) > 0 || rep.Capped || rep.Conflicts > 0 && i < 10
			if len(deletes.PendingOf(rep.Requests)) == len(rep.Waiting) || !progress {
				break
			}
		}
	}
	return out, ctx.Err()
}

// filters are the rows of each of rs.
func filters(rs []deletes.Request) []rows.Filter {
	out := make([]rows.Filter, len(rs))
	for i := range rs {
		out[i] = rs[i].Filter()
	}
	return out
}
