package retention

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// Config is what retention is told; the process maps its options onto it.
type Config struct {
	// DefaultPeriod is SIGLAKE_RETENTION_PERIOD: the period of tables without their own
	// (0 = keep for ever).
	DefaultPeriod time.Duration
	// DeleteDelay is SIGLAKE_RETENTION_DELETE_DELAY: how long removed objects stay in storage
	// for readers still on an older snapshot.
	DeleteDelay time.Duration
	// MaxFiles and MaxBytes cap one run's rewrites (SIGLAKE_RETENTION_MAX_FILES, _MAX_MB).
	MaxFiles int
	MaxBytes int64
	// TargetFileBytes splits a rewrite's output (at least the input's size: retention never
	// splits a file for size alone).
	TargetFileBytes int64
	// Metadata is the search metadata a rewrite's output carries.
	Metadata lake.MetadataFunc
}

// Runner runs retention on tables.
type Runner struct {
	Cfg            Config
	Lake           *lake.Lake
	Executor       *rewrite.Executor
	Metrics        *Metrics
	RewriteMetrics *rewrite.Metrics
	// Publish receives each table's retention state; nil publishes nothing.
	Publish Publisher
	Log     *zap.Logger
	Now     func() time.Time
	// OnFailure, when set, receives every failed retention rewrite or read of a file (the
	// maintainer's set-aside accounting).
	OnFailure rewrite.FailureFunc

	// clean remembers, per table and path, the files read without a row past retention (and the
	// outputs of its own rewrites), with the policy and cutoffs they were read under. Data files
	// never change, so a file stays clean until the policy changes or a cutoff moves past rows it
	// holds; without this a run would spend its caps re-reading the same clean files (a rule
	// whose value lies inside their min/max) and never reach the files behind them. Each run of a
	// table forgets its files that are no longer live, so a table's memory never outgrows its
	// live files.
	mu    sync.Mutex
	clean map[string]map[string]cleanRead
}

// cleanRead is what a file was found clean under.
type cleanRead struct {
	policy  string   // the encoded policy
	cutoffs []*int64 // each class's cutoff, in the order of Policy.Classes (nil: kept for ever)
}

// Options say how one run goes.
type Options struct {
	// Apply drops, rewrites and deletes; without it the run only reports what would go.
	Apply bool
	// NoCaps plans every rewrite (the dry run of `siglake retention show`).
	NoCaps bool
	// Policy, when set, is used instead of the stored one (`siglake retention set --dry-run`).
	Policy *Policy
}

// ErrBadPolicy marks a table whose stored policy does not validate: nothing of it is removed
// until it is fixed (`siglake retention set`).
var ErrBadPolicy = errors.New("invalid retention policy")

// Report says what one run found and did.
type Report struct {
	Table   string        `json:"table"`
	Time    time.Time     `json:"time"`
	Policy  string        `json:"policy"`
	Invalid string        `json:"invalid,omitempty"`
	Classes []ClassCutoff `json:"classes,omitempty"`
	// Outcome: dropped (committed something), clean (nothing past retention), capped (rewrites
	// left for a later run), conflict (lost to a concurrent change; the next run replans), keep
	// (the policy keeps every row), failed, dry_run.
	Outcome string `json:"outcome"`
	// What the run removed (or, dry run, would remove), by path.
	Paths map[string]*PathCount `json:"paths"`
	Picks []Pick                `json:"files,omitempty"`
	// Capped rewrites wait for a later run; SetAside files may hold rows past retention but are
	// set aside after failed rewrites and not read.
	Capped    int     `json:"capped,omitempty"`
	SetAside  int     `json:"set_aside,omitempty"`
	Conflicts int     `json:"conflicts,omitempty"`
	Snapshots []int64 `json:"snapshot_ids,omitempty"`
	// Freed are the objects deleted from storage in this run.
	FreedFiles int           `json:"freed_files"`
	FreedBytes int64         `json:"freed_bytes"`
	Pending    []PendingView `json:"pending,omitempty"`
	OldestRow  *time.Time    `json:"oldest_row,omitempty"`
	// Longest is the policy's longest period (nil when the policy was not read).
	Longest *time.Duration `json:"-"`
	// listed and pendingKnown say the run read the live files and the pending entries.
	listed, pendingKnown bool
	Error                string `json:"error,omitempty"`
	// publicPolicy and publicInvalid are Policy and Invalid without condition values, for the
	// status page (observe): a rule may name a person.
	publicPolicy, publicInvalid string
}

// ClassCutoff is a class and its cutoff at the run.
type ClassCutoff struct {
	Class  string `json:"class"`
	Period string `json:"period"`
	// Fingerprint identifies a rule's conditions (Rule.Fingerprint): the status page shows it in
	// place of their values, siglake retention show beside them.
	Fingerprint string     `json:"fingerprint,omitempty"`
	Cutoff      *time.Time `json:"cutoff,omitempty"` // absent: kept for ever
	public      string     // Class without condition values
}

// PathCount adds up one path's removals.
type PathCount struct {
	Files int   `json:"files"`
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
}

// Pick is one file's decision and result.
type Pick struct {
	Path      string `json:"path"`
	Partition string `json:"partition"`
	Action    string `json:"action"` // partition, file, rewrite, capped
	Bytes     int64  `json:"bytes"`
	Rows      int64  `json:"rows"`
	// Expired is the rows past retention (all rows of a drop; counted for a rewrite).
	Expired int64  `json:"rows_past_retention"`
	Reason  string `json:"reason"`
	Result  string `json:"result,omitempty"`
}

// PendingView is a pending deletion as status pages show it.
type PendingView struct {
	ID        string    `json:"id"`
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	RemovedAt time.Time `json:"removed_at"`
	DueAt     time.Time `json:"due_at"`
	Waiting   string    `json:"waiting_for,omitempty"`
}

func (r *Report) count(path string, files int, rows, bytes int64) {
	if r.Paths == nil {
		r.Paths = map[string]*PathCount{}
	}
	c := r.Paths[path]
	if c == nil {
		c = &PathCount{}
		r.Paths[path] = c
	}
	c.Files += files
	c.Rows += rows
	c.Bytes += bytes
}

func newID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Run runs retention on table name once: it removes what is past retention (remove) and, when
// applying, frees the storage of earlier removals that are due, whatever the removal found:
// freeing does not depend on the policy, so an invalid policy or a failing rewrite never holds
// storage back.
func (r *Runner) Run(ctx context.Context, name string, o Options) (rep Report, err error) {
	rep = Report{Table: name, Time: r.Now()}
	log := r.Log.With(zap.String("table", name))
	defer func() {
		// A shutdown (a rewrite waiting for memory, say) is no failed run: it is neither counted
		// nor published as an error.
		stopped := membudget.IsStopping(ctx, err)
		if err != nil && rep.Outcome == "" && !stopped {
			rep.Outcome = "failed"
		}
		if err != nil && !stopped {
			rep.Error = err.Error()
		}
		if o.Apply {
			r.observe(rep, err, log)
		}
	}()
	t, err := r.Lake.LoadTable(ctx, name)
	if err != nil {
		return rep, err
	}
	err = r.remove(ctx, t, o, &rep, log)
	if o.Apply {
		if ferr := r.free(ctx, name, &rep, log); ferr != nil {
			err = errors.Join(err, ferr)
		}
	} else {
		r.pendingView(t, &rep)
	}
	if err != nil {
		return rep, err
	}
	switch {
	case !o.Apply:
		rep.Outcome = "dry_run"
	case rep.Outcome == "keep":
	case len(rep.Snapshots) > 0:
		rep.Outcome = "dropped"
	case rep.Conflicts > 0:
		rep.Outcome = "conflict"
	case rep.Capped > 0:
		rep.Outcome = "capped"
	default:
		rep.Outcome = "clean"
	}
	return rep, nil
}

// remove plans and commits the removal of what is past retention in t.
func (r *Runner) remove(ctx context.Context, t *table.Table, o Options, rep *Report, log *zap.Logger) error {
	name := rep.Table
	// The live files first: the oldest-row gauge stays current even when the policy is invalid.
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return err
	}
	rep.listed = true
	live := make(map[string]lake.File, len(files))
	pfs := make([]plan.File, len(files))
	for i, f := range files {
		live[f.Path] = f
		pfs[i] = plan.File{Path: f.Path, Partition: f.Partition, SizeBytes: f.Size, Generation: f.Generation, Late: f.Late, MinTime: f.MinTime, MaxTime: f.MaxTime, Rows: f.Rows}
		if at := time.UnixMicro(f.MinTime).UTC(); rep.OldestRow == nil || at.Before(*rep.OldestRow) {
			rep.OldestRow = &at
		}
	}
	pol, _, err := Of(t.Properties())
	if o.Policy != nil {
		pol, err = *o.Policy, nil
	}
	if err == nil {
		err = pol.Validate(t.Schema(), lake.TimestampColumn)
	}
	if err != nil {
		// The error goes to logs and the status page: without values (Invalid, for siglake
		// retention show, keeps them).
		rep.Invalid, rep.publicInvalid = err.Error(), PublicError(err)
		return fmt.Errorf("%w in %s: %s; nothing is removed until `siglake retention set` fixes it", ErrBadPolicy, name, rep.publicInvalid)
	}
	fpKey := t.Metadata().TableUUID().String()
	rep.Policy, rep.publicPolicy = pol.Describe(r.Cfg.DefaultPeriod), pol.Public(r.Cfg.DefaultPeriod, fpKey)
	classes := pol.Classes(r.Now(), r.Cfg.DefaultPeriod)
	longest := Longest(classes)
	rep.Longest = &longest
	for _, c := range classes {
		cc := ClassCutoff{Class: c.Name, Period: FormatPeriod(c.Period), public: c.Name}
		if c.Rule > 0 {
			rule := pol.Rules[c.Rule-1]
			cc.Fingerprint = rule.Fingerprint(fpKey)
			cc.public = fmt.Sprintf("rule %d: %s", c.Rule, rule.Shape())
		}
		if c.Cutoff != nil {
			at := time.UnixMicro(*c.Cutoff).UTC()
			cc.Cutoff = &at
		}
		rep.Classes = append(rep.Classes, cc)
	}
	cut := Cutoffs(classes)
	if cut.Latest == nil {
		rep.Outcome = "keep"
		return nil
	}
	key := cleanKey(pol, classes)
	r.trimClean(name, live)
	// A set-aside file (siglake skipped list) is never read: it still goes when it is past the
	// cutoff whole (a drop reads nothing), and is reported otherwise.
	skipped := lake.SkippedFiles(t.Properties())
	for _, f := range files {
		if _, ok := skipped[f.Path]; ok && f.MinTime < *cut.Latest && (cut.Whole == nil || f.MaxTime >= *cut.Whole) {
			rep.Picks = append(rep.Picks, Pick{Path: f.Path, Partition: f.Partition, Action: "set_aside", Bytes: f.Size, Rows: f.Rows,
				Reason: "may hold rows past retention, but it is set aside after failed rewrites (siglake skipped list): not read"})
			rep.SetAside++
		}
	}
	mayHold := func(p string) bool { _, bad := skipped[p]; return !bad && !r.knownClean(name, live[p], key) }
	if len(pol.Rules) > 0 {
		// Rules narrow what may be past retention by column values: let scan planning rule
		// files out by their column bounds before any is read.
		expr, err := Expr(classes, t.Schema(), lake.TimestampColumn)
		if err != nil {
			return err
		}
		tasks, err := lake.PlanDataFiles(ctx, t, expr)
		if err != nil {
			return fmt.Errorf("plan retention candidates of %s: %w", name, err)
		}
		cand := make(map[string]bool, len(tasks))
		for _, task := range tasks {
			cand[task.File.FilePath()] = true
		}
		mayHold = func(p string) bool {
			_, bad := skipped[p]
			return cand[p] && !bad && !r.knownClean(name, live[p], key)
		}
	}
	rp := plan.PlanRetention(pfs, cut, plan.RetentionCaps{MaxFiles: r.Cfg.MaxFiles, MaxBytes: r.Cfg.MaxBytes, NoCaps: o.NoCaps}, mayHold)
	rep.Capped = len(rp.Capped)
	filter := RowFilter(classes)
	sc, err := lake.ArrowSchema(t)
	if err != nil {
		return err
	}
	fsys, err := t.FS(ctx)
	if err != nil {
		return err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return fmt.Errorf("FileIO of %s cannot write", t.Location())
	}
	if err := r.drop(ctx, t, wfs, rp.Drops, live, o, rep, log); err != nil {
		return err
	}
	var firstErr error
	for _, pick := range rp.Rewrites {
		if ctx.Err() != nil {
			break
		}
		if err := r.rewrite(ctx, t, fsys, sc, live, filter, pick, o, key, rep, log); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, pick := range rp.Capped {
		rep.Picks = append(rep.Picks, Pick{Path: pick.File.Path, Partition: pick.File.Partition, Action: pick.Path.String(),
			Bytes: pick.File.SizeBytes, Rows: pick.File.Rows, Reason: pick.Reason})
	}
	if o.Apply && len(rep.Snapshots) > 0 {
		// The age gauge is of what stays: read the live files again.
		if err := r.oldest(ctx, name, rep); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// cleanKey is the policy a run reads files under, and each class's cutoff.
func cleanKey(p Policy, cs []Class) cleanRead {
	k, _ := p.Encode()
	out := cleanRead{policy: k, cutoffs: make([]*int64, len(cs))}
	for i, c := range cs {
		if c.Cutoff != nil {
			v := *c.Cutoff
			out.cutoffs[i] = &v
		}
	}
	return out
}

// knownClean: f was found without a row past retention under the same policy, and no class's
// cutoff has since moved past a row of f that could be in that class.
func (r *Runner) knownClean(table string, f lake.File, now cleanRead) bool {
	r.mu.Lock()
	read, ok := r.clean[table][f.Path]
	r.mu.Unlock()
	if !ok || read.policy != now.policy || len(read.cutoffs) != len(now.cutoffs) {
		return false
	}
	for i, c := range now.cutoffs {
		was := read.cutoffs[i]
		switch {
		case c == nil: // the class keeps its rows for ever
		case *c <= f.MinTime: // no row of f is below the cutoff
		case was != nil && *c <= *was: // the cutoff has not moved past what was read
		case was != nil && f.MaxTime < *was:
			// Every row of f was below this class's cutoff and none was past retention: f holds
			// no row of this class, under this policy, whatever the cutoff does later.
		default:
			return false
		}
	}
	return true
}

// markClean records that f had no row past retention under key.
func (r *Runner) markClean(table string, f lake.File, key cleanRead) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clean == nil {
		r.clean = map[string]map[string]cleanRead{}
	}
	if r.clean[table] == nil {
		r.clean[table] = map[string]cleanRead{}
	}
	r.clean[table][f.Path] = key
}

// Forget drops what the runner remembers of table: its owner calls it once the table is no
// longer its own, so the memory stays bounded by the live files of the tables it owns.
func (r *Runner) Forget(table string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.clean, table)
}

// trimClean forgets table's files that are no longer live.
func (r *Runner) trimClean(table string, live map[string]lake.File) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range r.clean[table] {
		if _, ok := live[p]; !ok {
			delete(r.clean[table], p)
		}
	}
}

// oldest sets rep.OldestRow from the table's live files now.
func (r *Runner) oldest(ctx context.Context, name string, rep *Report) error {
	t, err := r.Lake.LoadTable(ctx, name)
	if err != nil {
		return err
	}
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return err
	}
	rep.OldestRow = nil
	for _, f := range files {
		if at := time.UnixMicro(f.MinTime).UTC(); rep.OldestRow == nil || at.Before(*rep.OldestRow) {
			rep.OldestRow = &at
		}
	}
	return nil
}

// drop removes the files wholly past retention in one metadata-only replace (no outputs, no data
// read or written), recording them as pending deletion in the same commit.
func (r *Runner) drop(ctx context.Context, t *table.Table, wfs icebergio.WriteFileIO, picks []plan.RetentionPick, live map[string]lake.File, o Options, rep *Report, log *zap.Logger) error {
	if len(picks) == 0 {
		return nil
	}
	name := t.Identifier()[len(t.Identifier())-1]
	old := make([]iceberg.DataFile, 0, len(picks))
	paths := make([]string, 0, len(picks))
	var bytes, rows int64
	parts := map[string]bool{}
	for _, p := range picks {
		pk := Pick{Path: p.File.Path, Partition: p.File.Partition, Action: p.Path.String(), Bytes: p.File.SizeBytes,
			Rows: p.File.Rows, Expired: p.File.Rows, Reason: p.Reason}
		if !o.Apply {
			pk.Result = "would drop (dry run)"
			rep.count(p.Path.String(), 1, p.File.Rows, p.File.SizeBytes)
		}
		rep.Picks = append(rep.Picks, pk)
		if p.Path == plan.RetentionPartition {
			parts[p.File.Partition] = true
		}
		paths = append(paths, p.File.Path)
		bytes += p.File.SizeBytes
		rows += p.File.Rows
	}
	if !o.Apply {
		return nil
	}
	for _, p := range picks {
		old = append(old, live[p.File.Path].DataFile)
	}
	now := r.Now()
	pending := Pending{ID: newID(now), Bytes: bytes, RemovedAt: now}
	var list string
	props := iceberg.Properties{"siglake.rewrite.kind": plan.KindRetention.String(), "siglake.retention.dropped-files": strconv.Itoa(len(old)),
		"siglake.retention.dropped-rows": strconv.FormatInt(rows, 10), "siglake.retention.pending": pending.ID}
	cr, err := r.Lake.CommitReplace(ctx, name, old, nil, props, func(cur *table.Table, txn *table.Transaction) error {
		pending.after(cur)
		if list != "" { // a retried attempt: the list object is already written
			return stageWritten(txn, pending, list, len(paths))
		}
		var err error
		list, err = stagePending(txn, wfs, t.Location(), pending, paths)
		return err
	})
	result := ""
	switch {
	case err == nil:
		rep.Snapshots = append(rep.Snapshots, cr.Table.CurrentSnapshot().SnapshotID)
		result = fmt.Sprintf("dropped, snapshot %d", cr.Table.CurrentSnapshot().SnapshotID)
		for _, p := range picks {
			rep.count(p.Path.String(), 1, p.File.Rows, p.File.SizeBytes)
		}
		log.Info("retention dropped files past the cutoff (metadata only)", zap.Int("files", len(old)), zap.Int("partitions", len(parts)),
			zap.Int64("rows", rows), zap.Int64("bytes", bytes), zap.Int64("snapshot_id", cr.Table.CurrentSnapshot().SnapshotID),
			zap.String("pending_id", pending.ID), zap.Strings("partitions_dropped", keys(parts)))
	case errors.Is(err, lake.ErrInputsGone) || lake.IsConflict(err):
		rep.Conflicts++
		result = "conflict: " + err.Error()
		r.removeList(wfs, list, cr.MaybeCommitted, log)
		log.Info("retention drop lost to a concurrent change; the next run replans", zap.Error(err))
		err = nil
	default:
		r.removeList(wfs, list, cr.MaybeCommitted, log)
		result = "failed: " + err.Error()
	}
	for i := len(rep.Picks) - len(picks); i < len(rep.Picks); i++ {
		rep.Picks[i].Result = result
	}
	if err != nil {
		return fmt.Errorf("retention drop of %d files of %s: %w", len(old), name, err)
	}
	return nil
}

// stageWritten stages p again with its already written list object.
func stageWritten(txn *table.Transaction, p Pending, list string, n int) error {
	p.Version, p.List, p.Count = Version, list, n
	v, err := jsonString(p)
	if err != nil {
		return err
	}
	return txn.SetProperties(iceberg.Properties{PendingPrefix + p.ID: v})
}

func (r *Runner) removeList(wfs icebergio.WriteFileIO, list string, maybe bool, log *zap.Logger) {
	if list == "" || maybe { // an unknown outcome may have committed the entry: keep its list
		return
	}
	if err := wfs.Remove(list); err != nil && !isNotExist(err) {
		log.Warn("could not remove the list of an uncommitted retention drop; gc will", zap.String("path", list), zap.Error(err))
	}
}

// rewrite counts a straddling file's rows past retention and, if any and applying, rewrites it
// without them through the rewrite executor; the replaced file goes on the pending list in the
// same commit.
func (r *Runner) rewrite(ctx context.Context, t *table.Table, fsys icebergio.IO, sc *arrow.Schema, live map[string]lake.File, filter *merge.RowFilter,
	pick plan.RetentionPick, o Options, key cleanRead, rep *Report, log *zap.Logger) error {
	name := t.Identifier()[len(t.Identifier())-1]
	f := live[pick.File.Path]
	pk := Pick{Path: f.Path, Partition: f.Partition, Action: pick.Path.String(), Bytes: f.Size, Rows: f.Rows, Reason: pick.Reason}
	own := true // false when a drop recorded the file itself
	defer func() {
		if own {
			rep.Picks = append(rep.Picks, pk)
		}
	}()
	per, _, err := merge.CountMatches(ctx, fsys, f.Path, sc, lake.TimestampColumn, filter, nil)
	if err != nil {
		pk.Result = "failed: " + err.Error()
		if o.Apply {
			job := rewrite.Job{Kind: plan.KindRetention.String(), Partition: f.Partition, Inputs: []lake.File{f}}
			out := rewrite.Observer{Metrics: r.RewriteMetrics, Log: r.Log}.ReadFailed(name, job, err)
			if r.OnFailure != nil {
				r.OnFailure(ctx, name, job, out)
			}
		}
		return fmt.Errorf("count rows past retention in %s: %w", f.Path, err)
	}
	for _, n := range per {
		pk.Expired += n
	}
	if pk.Expired == 0 {
		pk.Result = "no rows past retention: not rewritten"
		if o.Policy == nil { // read under the stored policy: later runs need not read it again
			r.markClean(name, f, key)
		}
		return nil
	}
	if !o.Apply {
		pk.Result = "would rewrite (dry run)"
		rep.count(plan.RetentionRewrite.String(), 1, pk.Expired, 0)
		return nil
	}
	if pk.Expired == f.Rows {
		// Every row is past its class's cutoff (rules keep none of them): a drop, no rewrite.
		own = false
		wfs, _ := fsys.(icebergio.WriteFileIO)
		return r.drop(ctx, t, wfs, []plan.RetentionPick{{File: pick.File, Path: plan.RetentionFile, Reason: "every row past its class's cutoff"}}, live, o, rep, log)
	}
	if !o.Apply {
		pk.Result = "would rewrite (dry run)"
		rep.count(plan.RetentionRewrite.String(), 1, pk.Expired, f.Size)
		return nil
	}
	now := r.Now()
	pending := Pending{ID: newID(now), Bytes: f.Size, RemovedAt: now}
	job := rewrite.Job{
		Kind:      plan.KindRetention.String(),
		Partition: f.Partition,
		Inputs:    []lake.File{f},
		// The output goes beside the input (lake.DataDir would fold s3://bucket).
		Dir:             f.Path[:strings.LastIndex(f.Path, "/")],
		Generation:      f.Generation + 1,
		TargetFileBytes: max(r.Cfg.TargetFileBytes, f.Size),
		Metadata:        r.Cfg.Metadata.For(t),
		RowFilter:       filter,
		Reason:          "rows past retention",
		Props: func(res merge.RewriteResult) iceberg.Properties {
			return iceberg.Properties{"siglake.retention.dropped-rows": strconv.FormatInt(sum(res.Deleted), 10), "siglake.retention.pending": pending.ID}
		},
		Stage: func(res merge.RewriteResult, cur *table.Table, txn *table.Transaction) error {
			pending.after(cur)
			_, err := stagePending(txn, nil, t.Location(), pending, []string{f.Path})
			return err
		},
	}
	out := r.Executor.Run(ctx, t, job)
	if out.Status == rewrite.Failed && r.OnFailure != nil {
		defer r.OnFailure(ctx, name, job, out)
	}
	rewrite.Observer{Metrics: r.RewriteMetrics, Log: r.Log}.Observe(name, job, out, zap.String("path", f.Path),
		zap.Int64("rows_past_retention", sum(out.Merge.Deleted)), zap.Int64("rows_before", f.Rows))
	switch err := out.Error(); {
	case err == nil:
		dropped := sum(out.Merge.Deleted)
		// The outputs hold no row past retention under this key: the next run need not read them.
		for _, o := range out.Merge.Outputs {
			r.markClean(name, lake.File{Path: o.Path}, key)
		}
		pk.Result = fmt.Sprintf("rewritten into %d files without %d rows, snapshot %d", len(out.Merge.Outputs), dropped, out.SnapshotID)
		rep.Snapshots = append(rep.Snapshots, out.SnapshotID)
		rep.count(plan.RetentionRewrite.String(), 1, dropped, f.Size)
		return nil
	case errors.Is(err, rewrite.ErrConflict):
		pk.Result = "conflict: " + err.Error()
		rep.Conflicts++
		return nil
	default:
		pk.Result = "failed: " + err.Error()
		return fmt.Errorf("retention rewrite of %s: %w", f.Path, err)
	}
}

// free deletes the objects of pending deletions that are due, then removes their entries. Before
// deleting, one commit marks the due entries as being deleted, so an entry's objects and bytes
// count in the freed metrics once: a process that dies halfway leaves the marked entry, and the
// next owner deletes again (an object already gone is fine) without counting it again.
func (r *Runner) free(ctx context.Context, name string, rep *Report, log *zap.Logger) error {
	t, err := r.Lake.LoadTable(ctx, name)
	if err != nil {
		return err
	}
	ps, errs := PendingOf(t.Properties())
	for _, e := range errs {
		log.Warn("ignoring a table property that is not a pending retention deletion; nothing of it is deleted", zap.Error(e))
	}
	now := r.Now()
	var due, mark []Pending
	for _, p := range ps {
		if ok, _ := p.Due(t, now, r.Cfg.DeleteDelay); ok {
			due = append(due, p)
			if !p.Deleting {
				mark = append(mark, p)
			}
		}
	}
	if len(due) == 0 || ctx.Err() != nil {
		r.pendingView(t, rep)
		return nil
	}
	if len(mark) > 0 {
		marked := iceberg.Properties{}
		for _, p := range mark {
			p.Deleting = true
			v, err := jsonString(p)
			if err != nil {
				return err
			}
			marked[PendingPrefix+p.ID] = v
		}
		if err := r.Lake.UpdateProperties(ctx, name, func(cur iceberg.Properties) (iceberg.Properties, []string) {
			set := iceberg.Properties{}
			for k, v := range marked {
				if _, ok := cur[k]; ok { // not finished by another owner meanwhile
					set[k] = v
				}
			}
			return set, nil
		}); err != nil {
			return err
		}
		if t, err = r.Lake.LoadTable(ctx, name); err != nil {
			return err
		}
	}
	fsys, err := t.FS(ctx)
	if err != nil {
		return err
	}
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return err
	}
	live := make(map[string]bool, len(files))
	for _, f := range files {
		live[f.Path] = true
	}
	var done []string
	for _, p := range due {
		if _, ok := t.Properties()[PendingPrefix+p.ID]; !ok {
			continue
		}
		paths, _, err := p.paths(fsys)
		if err != nil {
			return err
		}
		var failed error
		for _, path := range paths {
			if live[path] {
				// Never delete a live file, whatever a list says (a hand-edited property).
				failed = fmt.Errorf("pending deletion %s lists %s, which is live: not deleting it", p.ID, path)
				continue
			}
			if err := fsys.Remove(path); err != nil && !isNotExist(err) {
				failed = fmt.Errorf("delete %s of pending deletion %s: %w", path, p.ID, err)
			}
		}
		if failed == nil && p.List != "" {
			if err := fsys.Remove(p.List); err != nil && !isNotExist(err) {
				failed = fmt.Errorf("delete the pending deletion list %s: %w", p.List, err)
			}
		}
		if failed != nil {
			log.Warn("retention could not delete every object of a pending deletion; the next run retries", zap.String("pending_id", p.ID), zap.Error(failed))
			continue
		}
		if !p.Deleting { // marked by this run: count it once
			rep.FreedFiles += p.Count
			rep.FreedBytes += p.Bytes
		}
		done = append(done, PendingPrefix+p.ID)
		log.Info("retention freed storage", zap.String("pending_id", p.ID), zap.Int("files", p.Count), zap.Int64("bytes", p.Bytes),
			zap.Time("removed_at", p.RemovedAt), zap.Bool("retried", p.Deleting))
	}
	if len(done) > 0 {
		if err := r.Lake.UpdateProperties(ctx, name, func(cur iceberg.Properties) (iceberg.Properties, []string) {
			var present []string
			for _, k := range done {
				if _, ok := cur[k]; ok {
					present = append(present, k)
				}
			}
			return nil, present
		}); err != nil {
			return fmt.Errorf("remove freed retention entries of %s (their objects are gone; the next run removes the entries): %w", name, err)
		}
		if t, err = r.Lake.LoadTable(ctx, name); err != nil {
			return err
		}
	}
	r.pendingView(t, rep)
	return nil
}

// pendingView shows t's pending deletions in rep.
func (r *Runner) pendingView(t *table.Table, rep *Report) {
	ps, _ := PendingOf(t.Properties())
	rep.Pending, rep.pendingKnown = nil, true
	for _, p := range ps {
		_, why := p.Due(t, r.Now(), r.Cfg.DeleteDelay)
		rep.Pending = append(rep.Pending, PendingView{ID: p.ID, Files: p.Count, Bytes: p.Bytes, RemovedAt: p.RemovedAt,
			DueAt: p.RemovedAt.Add(r.Cfg.DeleteDelay), Waiting: why})
	}
}

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func sum(ns []int64) (s int64) {
	for _, n := range ns {
		s += n
	}
	return s
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
