package deletes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// Sweeper executes the deletion requests recorded in tables (docs/deletes.md): candidate
// files come from Iceberg scan planning with the requests' row filter; each candidate with
// matching rows is rewritten once without them (generation 0) and replaced in a validated commit
// that also updates the requests' progress. A request is done when a sweep finds no live file
// with rows it matches.
type Sweeper struct {
	Cfg     SweepConfig
	Lake    *lake.Lake
	Metrics *Metrics
	// RewriteMetrics count the delete-task rewrites with every other rewrite.
	RewriteMetrics *rewrite.Metrics
	// Publish receives each table's deletion state; nil publishes nothing.
	Publish Publisher
	Log     *zap.Logger
	Now     func() time.Time
	// OnFailure, when set, receives every failed delete-task rewrite or read of a candidate (the
	// maintainer's set-aside accounting).
	OnFailure rewrite.FailureFunc
	// Executor runs the delete-task rewrites; its AfterCommit is the Puffin index rebuild under
	// SIGLAKE_INDEX_REBUILD (a delete-task rewrite writes generation 0, often streamed, so its
	// outputs lack footer indexes like any streamed rewrite's).
	Executor *rewrite.Executor
	// Check vets each pending request against its table's properties before it runs (fold's
	// key-columns-only rule for rollup tables: deletes cannot import fold, which imports
	// deletes); a request it refuses is reported as invalid and never executed. nil runs every
	// request that validates against the schema.
	Check func(props iceberg.Properties, r Request) error

	// clean remembers (file, request) pairs known to have no matching row. Data files never
	// change, so this holds until the file is replaced; it lets a capped sweep move on to files
	// it has not examined instead of reading the same clean ones every time.
	clean map[string]bool
	// published is the last state published per table (a look without a sweep keeps its sweep).
	// publishMu guards it: maintenance publishes pending requests (Pending) while a sweep by
	// another caller of the same Sweeper may publish its own.
	publishMu sync.Mutex
	published map[string]*State
	// staged, when set (tests), runs in a delete-task rewrite's commit step after it read the
	// newest metadata and staged the progress, before the catalog commit.
	staged func()
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

// SweepConfig is what the sweeper is told; the process maps its options onto it.
type SweepConfig struct {
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

// Publisher receives each table's deletion state as a value it never writes again.
type Publisher interface {
	Deletes(table string, st *State)
}

// State is a table's deletion requests as the last sweep (or idle-cycle look) saw them.
type State struct {
	CheckedAt time.Time `json:"checked_at"`
	Sweeps    bool      `json:"sweeps"` // SIGLAKE_DELETE_TASKS
	// CancelPeriod is SIGLAKE_DELETE_CANCEL_PERIOD, which the execution times follow from.
	CancelPeriod string           `json:"cancel_period"`
	Pending      []PendingRequest `json:"pending"`
	LastSweep    *SweepSummary    `json:"last_sweep,omitempty"`
	Invalid      []string         `json:"invalid,omitempty"` // properties that do not decode
}

// PendingRequest is one pending deletion request as status pages show it: never its predicate,
// whose values are what an erasure exists to remove (siglake delete-sweep, with catalog access,
// shows them).
type PendingRequest struct {
	ID    string `json:"id"`
	Table string `json:"table"`
	// State is waiting (inside its cancel period: siglake delete-cancel withdraws it) or pending
	// (sweeps execute it).
	State          string    `json:"state"`
	AllRows        bool      `json:"all_rows,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	ExecuteAt      time.Time `json:"execute_at"`
	RowsDeleted    int64     `json:"rows_deleted"`
	FilesRewritten int64     `json:"files_rewritten"`
}

// Waiting is the State of a pending request inside its cancel period.
const Waiting = "waiting"

// SweepSummary is what one delete sweep of a table did.
type SweepSummary struct {
	Time        time.Time `json:"time"`
	Outcome     string    `json:"outcome"`
	Candidates  int       `json:"candidates"`
	Examined    int       `json:"examined"`
	Rewritten   int       `json:"rewritten"`
	RowsDeleted int64     `json:"rows_deleted"`
	Done        []string  `json:"done,omitempty"`
	Capped      bool      `json:"capped,omitempty"`
	Error       string    `json:"error,omitempty"`
}

// SweepOutcomes are the outcome label values of siglake_delete_sweeps_total.
var SweepOutcomes = []string{"deleted", "clean", "capped", "conflict", "failed"}

// Metrics are the delete tasks' metrics (docs/metrics.md "Delete tasks").
type Metrics struct {
	Pending        *prometheus.GaugeVec   // table
	RowsDeleted    *prometheus.CounterVec // table
	FilesRewritten *prometheus.CounterVec // table
	RequestsDone   *prometheus.CounterVec // table
	Sweeps         *prometheus.CounterVec // outcome
}

// NewMetrics registers the delete tasks' metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_delete_requests_pending", Help: "Deletion requests recorded in the table and not done yet (from the last maintenance look at the table)."}, []string{"table"}),
		RowsDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_delete_rows_deleted_total", Help: "Rows removed by committed delete-task rewrites."}, []string{"table"}),
		FilesRewritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_delete_files_rewritten_total", Help: "Data files replaced by committed delete-task rewrites (a file left with no rows is removed without a replacement)."}, []string{"table"}),
		RequestsDone: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_delete_requests_done_total", Help: "Deletion requests marked done (a sweep found no live file with matching rows)."}, []string{"table"}),
		Sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_delete_sweeps_total", Help: "Delete sweeps of a table by outcome: deleted (committed a rewrite), clean (no live file had matching rows), capped (stopped at the per-sweep file or byte cap with nothing to rewrite yet), conflict (a rewrite lost to a concurrent change; retried on a later sweep), failed."}, []string{"outcome"}),
	}
	reg.MustRegister(m.Pending, m.RowsDeleted, m.FilesRewritten, m.RequestsDone, m.Sweeps)
	for _, o := range SweepOutcomes {
		m.Sweeps.WithLabelValues(o) // at 0, so the first failed sweep shows in increase()
	}
	return m
}

// SweepOptions say how one sweep runs.
type SweepOptions struct {
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

// SweepReport says what one sweep of a table found and did.
type SweepReport struct {
	Table      string          `json:"table"`
	Requests   []Request       `json:"requests"` // every request, as stored after the sweep
	Invalid    []string        `json:"invalid,omitempty"`
	Candidates []CandidateFile `json:"candidates"`
	Outcome    string          `json:"outcome"`
	Rewritten  int             `json:"rewritten"`
	Deleted    int64           `json:"rows_deleted"`
	Done       []string        `json:"done,omitempty"`
	Capped     bool            `json:"capped,omitempty"`
	Conflicts  int             `json:"conflicts,omitempty"`
	// SetAside candidates were not read: set aside after failed rewrites. Their requests stay
	// pending.
	SetAside int `json:"set_aside,omitempty"`
	// Waiting are the pending requests an applying sweep left alone: inside their cancel period.
	Waiting   []string         `json:"waiting,omitempty"`
	ByRequest map[string]int64 `json:"matching_rows_by_request,omitempty"`
	Snapshots []int64          `json:"snapshot_ids,omitempty"` // of the committed rewrites
	examined  int
	pending   []Request
}

// CandidateFile is a file scan planning could not rule out for some pending request.
type CandidateFile struct {
	Path     string           `json:"path"`
	Bytes    int64            `json:"bytes"`
	Rows     int64            `json:"rows"`
	Matching map[string]int64 `json:"matching_rows,omitempty"` // by request id; absent = not examined
	Result   string           `json:"result"`
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

// Sweep runs one delete sweep of table name.
func (s *Sweeper) Sweep(ctx context.Context, name string, o SweepOptions) (rep SweepReport, err error) {
	rep.Table = name
	if s.clean == nil {
		s.clean = map[string]bool{}
	}
	log := s.Log.With(zap.String("table", name))
	defer func() {
		stopped := membudget.IsStopping(ctx, err)
		switch {
		case stopped: // a shutdown (a rewrite waiting for memory, say) is no failed sweep
			rep.Outcome = ""
		case err != nil:
			rep.Outcome = "failed"
		}
		if o.Apply && rep.Outcome != "" {
			s.Metrics.Sweeps.WithLabelValues(rep.Outcome).Inc()
		}
		switch {
		case !stopped:
			s.publish(name, rep, err)
		case rep.Requests != nil:
			s.publish(name, rep, nil) // the requests read: the last sweep's summary stays, with no error
		}
	}()
	t, err := s.Lake.LoadTable(ctx, name)
	if err != nil {
		return rep, err
	}
	all, bad := List(t.Properties())
	pending, invalid := s.executable(t, all)
	for _, e := range append(bad, invalid...) {
		rep.Invalid = append(rep.Invalid, e.Error())
		// The property, not the cause: it may quote the request's values (siglake delete-sweep
		// prints it).
		log.Warn(publicInvalid(e.Error()) + "; it is ignored")
	}
	rep.Requests = all
	if o.Only != nil {
		kept := pending[:0:0]
		for _, r := range pending {
			if contains(o.Only, r.ID) {
				kept = append(kept, r)
			}
		}
		pending = kept
	}
	if o.Apply && !o.SkipCancelPeriod {
		var due []Request
		pending, due = nil, pending
		for _, r := range due {
			if s.waiting(r) {
				rep.Waiting = append(rep.Waiting, r.ID)
				continue
			}
			pending = append(pending, r)
		}
	}
	rep.pending = pending
	if len(rep.pending) == 0 || t.CurrentSnapshot() == nil {
		return rep, nil
	}
	expr, err := AnyExpr(rep.pending, t.Schema(), lake.TimestampColumn)
	if err != nil {
		return rep, err
	}
	// One candidate per data file, however many row-group ranges scan planning split it into.
	tasks, err := lake.PlanDataFiles(ctx, t, expr)
	if err != nil {
		return rep, fmt.Errorf("plan candidate files of %s: %w", name, err)
	}
	s.trimClean(tasks)
	sc, err := lake.ArrowSchema(t)
	if err != nil {
		return rep, err
	}
	fsys, err := t.FS(ctx)
	if err != nil {
		return rep, err
	}
	rep.ByRequest = map[string]int64{}
	// Which candidates this sweep examines is the planner's decision (plan.PlanDeletes).
	// A set-aside file (siglake skipped list) is never read: it takes no part in the planning (so
	// it uses up no cap) and is reported; the requests it may hold rows of stay pending.
	skipped := lake.SkippedFiles(t.Properties())
	kept := tasks[:0]
	for _, task := range tasks {
		if _, ok := skipped[task.File.FilePath()]; ok {
			df := task.File
			rep.Candidates = append(rep.Candidates, CandidateFile{Path: df.FilePath(), Bytes: df.FileSizeBytes(), Rows: df.Count(),
				Result: "not examined: set aside after failed rewrites (siglake skipped list)"})
			rep.SetAside++
			continue
		}
		kept = append(kept, task)
	}
	tasks = kept
	cands := make([]plan.DeleteCandidate, len(tasks))
	for i, task := range tasks {
		cands[i] = plan.DeleteCandidate{Path: task.File.FilePath(), Bytes: task.File.FileSizeBytes()}
		for _, r := range rep.pending {
			if o.NoCaps || !s.clean[s.cleanKey(cands[i].Path, r.ID)] {
				cands[i].Open = append(cands[i].Open, r.ID)
			}
		}
	}
	dp := plan.PlanDeletes(cands, plan.DeleteCaps{MaxFiles: s.Cfg.MaxFiles, MaxBytes: s.Cfg.MaxBytes, NoCaps: o.NoCaps})
	rep.Capped = dp.Capped
	byID := map[string]Request{}
	for _, r := range rep.pending {
		byID[r.ID] = r
	}
	var firstErr error
	for i, pick := range dp.Picks {
		df := tasks[i].File
		c := CandidateFile{Path: df.FilePath(), Bytes: df.FileSizeBytes(), Rows: df.Count(), Result: pick.Reason}
		switch {
		case pick.Action != plan.DeleteExamine:
		case ctx.Err() != nil:
			c.Result = "not examined: shutting down"
		default:
			rep.examined++
			open := make([]Request, len(pick.Requests))
			for j, id := range pick.Requests {
				open[j] = byID[id]
			}
			err := s.examine(ctx, t, fsys, sc, df, open, o, &c, &rep, log)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
		rep.Candidates = append(rep.Candidates, c)
	}
	switch {
	case firstErr != nil:
		return rep, firstErr
	case rep.Rewritten > 0:
		rep.Outcome = "deleted"
	case rep.Conflicts > 0:
		rep.Outcome = "conflict"
	case rep.Capped:
		rep.Outcome = "capped"
	default:
		rep.Outcome = "clean"
	}
	// markDone decides per request: one whose candidates include a set-aside file is never found
	// clean there, so it stays pending; the others can be done.
	if o.Apply && !rep.Capped && rep.Conflicts == 0 && ctx.Err() == nil {
		if err := s.markDone(ctx, name, &rep, log); err != nil {
			return rep, err
		}
	}
	// Report what is stored now.
	if t, err := s.Lake.LoadTable(ctx, name); err == nil {
		rep.Requests, _ = List(t.Properties())
	}
	return rep, nil
}

// waiting says whether r is still inside its cancel period: before the later of its stored
// execution time and its creation plus this sweeper's period. A request that stores none, or
// stores its creation (recorded with a period of 0), swept with a period of 0, never waits,
// whatever the clocks of the recorder and the sweeper say.
func (s *Sweeper) waiting(r Request) bool {
	if s.Cfg.CancelPeriod <= 0 && (r.NotBefore == nil || !r.NotBefore.After(r.CreatedAt)) {
		return false
	}
	return s.Now().Before(r.ExecuteAt(s.Cfg.CancelPeriod))
}

func contains(ss []string, v string) bool {
	for _, x := range ss {
		if x == v {
			return true
		}
	}
	return false
}

// executable is the pending requests of rs that a sweep of t runs: valid against t's schema and
// passing Check; an error for each of the others.
func (s *Sweeper) executable(t *table.Table, rs []Request) ([]Request, []error) {
	pending, invalid := Executable(PendingOf(rs), t.Schema(), lake.TimestampColumn)
	if s.Check == nil {
		return pending, invalid
	}
	ok := pending[:0:0]
	for _, r := range pending {
		if err := s.Check(t.Properties(), r); err != nil {
			invalid = append(invalid, fmt.Errorf("table property %s: %w", Key(r.ID), err))
			continue
		}
		ok = append(ok, r)
	}
	return ok, invalid
}

// examine counts a candidate's matching rows per open request and, when applying, rewrites it
// without them.
func (s *Sweeper) examine(ctx context.Context, t *table.Table, fsys icebergio.IO, sc *arrow.Schema, df iceberg.DataFile,
	open []Request, o SweepOptions, c *CandidateFile, rep *SweepReport, log *zap.Logger) error {
	f, err := RowFilter(open)
	if err != nil {
		return err
	}
	per, _, err := merge.CountMatches(ctx, fsys, c.Path, sc, lake.TimestampColumn, f, nil)
	if err != nil {
		c.Result = "failed: " + err.Error()
		name := t.Identifier()[len(t.Identifier())-1]
		gen, _ := merge.ParseGeneration(df.FilePath())
		job := rewrite.Job{Kind: plan.KindDeleteTask.String(), Partition: partitionOf(df.FilePath()),
			Inputs: []lake.File{{Path: df.FilePath(), Size: df.FileSizeBytes(), Rows: df.Count(), Generation: gen, DataFile: df}}}
		out := rewrite.Observer{Metrics: s.RewriteMetrics, Log: s.Log}.ReadFailed(name, job, err)
		if s.OnFailure != nil {
			s.OnFailure(ctx, name, job, out)
		}
		return fmt.Errorf("count matching rows of %s: %w", c.Path, err)
	}
	c.Matching = map[string]int64{}
	var matched []Request
	for i, r := range open {
		c.Matching[r.ID] = per[i]
		rep.ByRequest[r.ID] += per[i]
		if per[i] == 0 {
			if o.Apply || o.NoCaps {
				s.clean[s.cleanKey(c.Path, r.ID)] = true
			}
			continue
		}
		matched = append(matched, r)
	}
	if len(matched) == 0 {
		c.Result = "no matching rows: not rewritten"
		return nil
	}
	if !o.Apply {
		c.Result = "would rewrite (dry run)"
		return nil
	}
	snap, deleted, outs, err := s.rewrite(ctx, t, df, matched, log)
	switch {
	case err == nil:
		c.Result = fmt.Sprintf("rewritten into %d files, snapshot %d", outs, snap)
		rep.Rewritten++
		rep.Deleted += deleted
		rep.Snapshots = append(rep.Snapshots, snap)
		return nil
	case errors.Is(err, rewrite.ErrConflict):
		c.Result = "conflict: " + err.Error()
		rep.Conflicts++
		return nil
	}
	c.Result = "failed: " + err.Error()
	return err
}

// rewrite writes df without the rows of matched and commits the replace together with the
// requests' progress, through the rewrite executor. The commit pins the branch head it read (so
// progress written by someone else is never overwritten) and is retried on fresh metadata while
// df is still live.
func (s *Sweeper) rewrite(ctx context.Context, t *table.Table, df iceberg.DataFile, matched []Request, log *zap.Logger) (snap, deleted int64, outputs int, err error) {
	name := t.Identifier()[len(t.Identifier())-1]
	f, err := RowFilter(matched)
	if err != nil {
		return 0, 0, 0, err
	}
	gen, _ := merge.ParseGeneration(df.FilePath())
	ids := make([]string, len(matched))
	for i, r := range matched {
		ids[i] = r.ID
	}
	sum := func(res merge.RewriteResult) (n int64) {
		for _, d := range res.Deleted {
			n += d
		}
		return n
	}
	job := rewrite.Job{
		Kind:      plan.KindDeleteTask.String(),
		Partition: partitionOf(df.FilePath()),
		Inputs:    []lake.File{{Path: df.FilePath(), Size: df.FileSizeBytes(), Rows: df.Count(), Generation: gen, DataFile: df}},
		// The output goes beside the input (same partition directory). Not path.Dir: it would fold
		// "s3://bucket" into "s3:/bucket" (see lake.DataDir).
		Dir:             df.FilePath()[:strings.LastIndex(df.FilePath(), "/")],
		Generation:      0,
		TargetFileBytes: max(s.Cfg.TargetFileBytes, df.FileSizeBytes()),
		Metadata:        s.Cfg.Metadata.For(t),
		RowFilter:       f,
		DeleteTask:      true,
		Reason:          "deletion requests " + strings.Join(ids, ","),
		Props: func(res merge.RewriteResult) iceberg.Properties {
			return iceberg.Properties{"siglake.delete.requests": strings.Join(ids, ","), "siglake.delete.rows": fmt.Sprint(sum(res))}
		},
		// Progress goes on top of what the table holds at the commit, in the same commit.
		Stage: func(res merge.RewriteResult, cur *table.Table, txn *table.Transaction) error {
			stored, _ := List(cur.Properties())
			byID := map[string]Request{}
			for _, r := range stored {
				byID[r.ID] = r
			}
			var upd []Request
			for i, r := range matched {
				sr, ok := byID[r.ID]
				switch {
				case !ok:
					// Removed, or no longer a request that decodes, since the sweep read it: nobody
					// asks for these rows to go any more. A conflict commits nothing and removes
					// the outputs; the next sweep plans without it.
					return fmt.Errorf("%w: deletion request %s is gone from the table properties", table.ErrCommitFailed, r.ID)
				case sr.State != Pending:
					// Cancelled (or changed) since the sweep read it: the same.
					return fmt.Errorf("%w: deletion request %s is %s now", table.ErrCommitFailed, r.ID, sr.State)
				}
				sr.RowsDeleted += res.Deleted[i]
				sr.FilesRewritten++
				upd = append(upd, sr)
			}
			if err := Stage(txn, upd...); err != nil {
				return err
			}
			if s.staged != nil {
				s.staged()
			}
			return nil
		},
	}
	out := s.Executor.Run(ctx, t, job)
	if out.Status == rewrite.Failed && s.OnFailure != nil {
		defer s.OnFailure(ctx, name, job, out)
	}
	rewrite.Observer{Metrics: s.RewriteMetrics, Log: s.Log}.Observe(name, job, out, zap.String("path", df.FilePath()),
		zap.Strings("request_ids", ids), zap.Int64("rows_deleted", sum(out.Merge)), zap.Int64("rows_before", df.Count()))
	if err := out.Error(); err != nil {
		return 0, 0, 0, fmt.Errorf("delete-task rewrite of %s: %w", df.FilePath(), err)
	}
	deleted = sum(out.Merge)
	s.Metrics.RowsDeleted.WithLabelValues(name).Add(float64(deleted))
	s.Metrics.FilesRewritten.WithLabelValues(name).Inc()
	return out.SnapshotID, deleted, len(out.Merge.Outputs), nil
}

// markDone marks done each pending request that every candidate of this sweep was clean for,
// after checking again on the table's newest metadata (rows appended since the sweep planned
// must be examined first). The commit pins that metadata's branch head.
func (s *Sweeper) markDone(ctx context.Context, name string, rep *SweepReport, log *zap.Logger) error {
	for attempt := 0; attempt < 4; attempt++ {
		t, err := s.Lake.LoadTable(ctx, name)
		if err != nil {
			return err
		}
		stored, _ := List(t.Properties())
		pending, _ := s.executable(t, stored)
		var done []Request
		for _, r := range pending {
			if contains(rep.Waiting, r.ID) || rep.pending != nil && !containsReq(rep.pending, r.ID) {
				continue // not part of this sweep (waiting out its cancel period, or recorded since)
			}
			expr, err := r.Expr(t.Schema(), lake.TimestampColumn)
			if err != nil {
				return err
			}
			tasks, err := lake.PlanDataFiles(ctx, t, expr)
			if err != nil {
				return fmt.Errorf("plan candidate files of %s: %w", name, err)
			}
			clean := true
			for _, task := range tasks {
				if !s.clean[s.cleanKey(task.File.FilePath(), r.ID)] {
					clean = false
					break
				}
			}
			if !clean {
				continue
			}
			now := s.Now().UTC()
			r.State, r.DoneAt = Done, &now
			if snap := t.CurrentSnapshot(); snap != nil {
				r.DoneSnapshotID = snap.SnapshotID
			}
			done = append(done, r)
		}
		if len(done) == 0 {
			return nil
		}
		txn := t.NewTransaction()
		if err := txn.AssertRefSnapshotID(""); err != nil {
			return err
		}
		if err := Stage(txn, done...); err != nil {
			return err
		}
		// Done and cancelled requests past their retention leave the table metadata in the same
		// commit, so the metadata every later commit rewrites does not grow with every request
		// ever made.
		var expired []string
		for _, r := range stored {
			if r.expired(s.Now()) {
				expired = append(expired, Key(r.ID))
			}
		}
		if len(expired) > 0 {
			if err := txn.RemoveProperties(expired); err != nil {
				return err
			}
		}
		if _, err := txn.Commit(ctx); err != nil {
			if lake.IsConflict(err) {
				continue
			}
			return fmt.Errorf("mark deletion requests done in %s: %w", name, err)
		}
		for _, r := range done {
			rep.Done = append(rep.Done, r.ID)
			s.Metrics.RequestsDone.WithLabelValues(name).Inc()
			// The request's columns, not its values: they are what an erasure exists to remove, and
			// logs are kept and shipped (siglake delete-sweep shows the predicate).
			cols := make([]string, len(r.Where))
			for i, c := range r.Where {
				cols[i] = c.Column
			}
			log.Info("deletion request done", zap.String("request_id", r.ID), zap.Strings("columns", cols),
				zap.Int64("rows_deleted", r.RowsDeleted), zap.Int64("files_rewritten", r.FilesRewritten),
				zap.Int64("snapshot_id", r.DoneSnapshotID))
			for k := range s.clean {
				if strings.HasSuffix(k, "\x00"+r.ID) {
					delete(s.clean, k)
				}
			}
		}
		return nil
	}
	return nil // the table kept moving: the next sweep checks again
}

// expired says whether r is done or cancelled for longer than DoneRetention (a cancelled request
// another tool wrote without cancelled_at counts from its creation).
func (r *Request) expired(now time.Time) bool {
	switch {
	case r.State == Done && r.DoneAt != nil:
		return now.Sub(*r.DoneAt) > DoneRetention
	case r.State == Cancelled && r.CancelledAt != nil:
		return now.Sub(*r.CancelledAt) > DoneRetention
	case r.State == Cancelled:
		return now.Sub(r.CreatedAt) > DoneRetention
	}
	return false
}

func containsReq(rs []Request, id string) bool {
	for _, r := range rs {
		if r.ID == id {
			return true
		}
	}
	return false
}

// publish updates the pending gauge and /debug/status from a sweep.
func (s *Sweeper) publish(name string, rep SweepReport, err error) {
	s.publishMu.Lock()
	defer s.publishMu.Unlock()
	var pending []PendingRequest
	for _, r := range rep.Requests {
		if r.State == Pending {
			p := PendingRequest{ID: r.ID, Table: name, State: Pending, AllRows: r.AllRows, CreatedAt: r.CreatedAt,
				ExecuteAt: r.ExecuteAt(s.Cfg.CancelPeriod), RowsDeleted: r.RowsDeleted, FilesRewritten: r.FilesRewritten}
			if s.waiting(r) {
				p.State = Waiting
			}
			pending = append(pending, p)
		}
	}
	// An invalid request's error may quote its values ("column host value ..."): status pages
	// name the property only.
	invalid := make([]string, len(rep.Invalid))
	for i, e := range rep.Invalid {
		invalid[i] = publicInvalid(e)
	}
	if err == nil || rep.Requests != nil {
		s.Metrics.Pending.WithLabelValues(name).Set(float64(len(pending)))
	}
	sum := &SweepSummary{Time: s.Now(), Outcome: rep.Outcome, Candidates: len(rep.Candidates), Examined: rep.examined,
		Rewritten: rep.Rewritten, RowsDeleted: rep.Deleted, Done: rep.Done, Capped: rep.Capped}
	if err != nil {
		sum.Error = err.Error()
	}
	last := sum
	if prev := s.published[name]; rep.Outcome == "" && err == nil && prev != nil {
		last = prev.LastSweep // a look without a sweep keeps the last sweep's summary
	}
	st := &State{CheckedAt: s.Now(), Sweeps: s.Cfg.Sweeps, CancelPeriod: s.Cfg.CancelPeriod.String(), Pending: pending, Invalid: invalid, LastSweep: last}
	if s.published == nil {
		s.published = map[string]*State{}
	}
	s.published[name] = st
	if s.Publish != nil {
		s.Publish.Deletes(name, st)
	}
}

// publicInvalid is an invalid request's error (Executable, List) without its cause, which may
// quote the request's values: the property it is stored under.
func publicInvalid(e string) string {
	key, _, _ := strings.Cut(strings.TrimPrefix(e, "table property "), ":")
	return "table property " + key + ": not a valid deletion request, never executed (siglake delete-sweep says why)"
}

// Pending refreshes a table's pending requests (gauge and status) without sweeping: what an idle
// cycle does when SIGLAKE_DELETE_TASKS is off.
func (s *Sweeper) Pending(ctx context.Context, name string) error {
	t, err := s.Lake.LoadTable(ctx, name)
	if err != nil {
		return err
	}
	all, bad := List(t.Properties())
	rep := SweepReport{Table: name, Requests: all}
	for _, e := range bad {
		rep.Invalid = append(rep.Invalid, e.Error())
	}
	s.publish(name, rep, nil)
	return nil
}

// SweepTables is `siglake delete-sweep`: without apply, one uncapped dry run per table (requests,
// candidate files, matching rows); with apply, sweeps each table until no request is pending or
// a sweep makes no progress, whatever SIGLAKE_DELETE_TASKS says. tables empty = every table.
func (s *Sweeper) SweepTables(ctx context.Context, tables []string, apply bool) ([]SweepReport, error) {
	return s.SweepTablesWith(ctx, tables, SweepOptions{Apply: apply})
}

// SweepTablesWith is SweepTables with o's Apply and SkipCancelPeriod.
func (s *Sweeper) SweepTablesWith(ctx context.Context, tables []string, o SweepOptions) ([]SweepReport, error) {
	apply := o.Apply
	if len(tables) == 0 {
		var err error
		if tables, err = s.Lake.ListTables(ctx); err != nil {
			return nil, err
		}
	}
	var out []SweepReport
	for _, name := range tables {
		if !apply {
			rep, err := s.Sweep(ctx, name, SweepOptions{NoCaps: true})
			out = append(out, rep)
			if err != nil {
				return out, err
			}
			continue
		}
		for i := 0; ctx.Err() == nil; i++ {
			rep, err := s.Sweep(ctx, name, SweepOptions{Apply: true, SkipCancelPeriod: o.SkipCancelPeriod})
			out = append(out, rep)
			if err != nil {
				return out, err
			}
			progress := rep.Rewritten > 0 || len(rep.Done) > 0 || rep.Capped || rep.Conflicts > 0 && i < 10
			if len(PendingOf(rep.Requests)) == len(rep.Waiting) || !progress {
				break
			}
		}
	}
	return out, ctx.Err()
}
