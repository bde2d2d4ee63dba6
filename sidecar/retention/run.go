package retention

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/filtered"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/retention/pending"
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
	// Rewriter runs the retention rewrites. Its OnFailure is the maintainer's set-aside
	// accounting; its Log is the runner's too.
	filtered.Rewriter
	Cfg     Config
	Lake    *lake.Lake
	Metrics *Metrics
	// Publish receives each table's retention state; nil publishes nothing.
	Publish Publisher
	Now     func() time.Time

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
	// happened is what the run did along the way, for the observer's log lines.
	happened happened
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

// Run runs retention on table name once: it removes what is past retention (remove) and, when
// applying, frees the storage of earlier removals that are due, whatever the removal found:
// freeing does not depend on the policy, so an invalid policy or a failing rewrite never holds
// storage back. It records nothing itself: an applied run's report goes to the observer.
func (r *Runner) Run(ctx context.Context, name string, o Options) (rep Report, err error) {
	rep = Report{Table: name, Time: r.Now()}
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
			r.observe(rep, err)
		}
	}()
	t, err := r.Lake.LoadTable(ctx, name)
	if err != nil {
		return rep, err
	}
	err = r.remove(ctx, t, o, &rep)
	if o.Apply {
		if ferr := r.free(ctx, name, &rep); ferr != nil {
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

// removal is one run's removal from a table under way: what its steps share.
type removal struct {
	*Runner
	o   Options
	rep *Report
	src filtered.Source
	wfs icebergio.WriteFileIO
	// live are the table's live files by path; files in the order listed.
	live  map[string]lake.File
	files []lake.File
	pol   Policy
	// classes are the policy's classes at the run, key what a file found clean is clean under.
	classes []Class
	key     cleanRead
	filter  *rowfilter.Filter
}

// remove plans and commits the removal of what is past retention in t.
func (r *Runner) remove(ctx context.Context, t *table.Table, o Options, rep *Report) error {
	m := &removal{Runner: r, o: o, rep: rep}
	// The live files first: the oldest-row gauge stays current even when the policy is invalid.
	if err := m.listLive(ctx, t); err != nil {
		return err
	}
	if err := m.policy(t); err != nil {
		return err
	}
	cut := Cutoffs(m.classes)
	if cut.Latest == nil {
		rep.Outcome = "keep"
		return nil
	}
	mayHold, err := m.candidates(ctx, t, cut)
	if err != nil {
		return err
	}
	pfs := make([]level.File, len(m.files))
	for i, f := range m.files {
		pfs[i] = level.File{Path: f.Path, Partition: f.Partition, SizeBytes: f.Size, Generation: f.Generation, Late: f.Late, MinTime: f.MinTime, MaxTime: f.MaxTime, Rows: f.Rows}
	}
	rp := plan.PlanRetention(pfs, cut, plan.RetentionCaps{MaxFiles: r.Cfg.MaxFiles, MaxBytes: r.Cfg.MaxBytes, NoCaps: o.NoCaps}, mayHold)
	rep.Capped = len(rp.Capped)
	if err := m.open(ctx, t); err != nil {
		return err
	}
	return m.execute(ctx, rp)
}

// listLive reads t's live files and the oldest row among them.
func (m *removal) listLive(ctx context.Context, t *table.Table) error {
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return err
	}
	m.rep.listed = true
	m.files, m.live = files, make(map[string]lake.File, len(files))
	for _, f := range files {
		m.live[f.Path] = f
	}
	m.rep.OldestRow = oldestRow(files)
	return nil
}

// oldestRow is the lower time bound of files; nil for none.
func oldestRow(files []lake.File) *time.Time {
	var oldest *time.Time
	for _, f := range files {
		if at := time.UnixMicro(f.MinTime).UTC(); oldest == nil || at.Before(*oldest) {
			oldest = &at
		}
	}
	return oldest
}

// policy reads and validates t's policy (or o.Policy) and reports it and its classes' cutoffs.
func (m *removal) policy(t *table.Table) error {
	pol, _, err := PolicyProperty.Read(t.Properties())
	if m.o.Policy != nil {
		pol, err = *m.o.Policy, nil
	}
	if err == nil {
		err = pol.Validate(t.Schema(), lake.TimestampColumn)
	}
	if err != nil {
		// The error goes to logs and the status page: without values (Invalid, for siglake
		// retention show, keeps them).
		m.rep.Invalid, m.rep.publicInvalid = err.Error(), PublicError(err)
		return fmt.Errorf("%w in %s: %s; nothing is removed until `siglake retention set` fixes it", ErrBadPolicy, m.rep.Table, m.rep.publicInvalid)
	}
	fpKey := t.Metadata().TableUUID().String()
	m.rep.Policy, m.rep.publicPolicy = pol.Describe(m.Cfg.DefaultPeriod), pol.Public(m.Cfg.DefaultPeriod, fpKey)
	m.pol, m.classes = pol, pol.Classes(m.Now(), m.Cfg.DefaultPeriod)
	longest := Longest(m.classes)
	m.rep.Longest = &longest
	for _, c := range m.classes {
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
		m.rep.Classes = append(m.rep.Classes, cc)
	}
	m.key = cleanKey(pol, m.classes)
	return nil
}

// candidates is which files may hold rows past retention and are worth reading: not set aside,
// not known clean and, under rules, not ruled out by scan planning. A set-aside file (siglake
// skipped list) is never read: it still goes when it is past the cutoff whole (a drop reads
// nothing), and is reported otherwise.
func (m *removal) candidates(ctx context.Context, t *table.Table, cut plan.RetentionCutoffs) (func(string) bool, error) {
	m.trimClean(m.rep.Table, m.live)
	_, aside := filtered.SetAside(t.Properties(), m.files, func(f lake.File) string { return f.Path })
	skipped := make(map[string]bool, len(aside))
	for _, f := range aside {
		skipped[f.Path] = true
		if f.MinTime < *cut.Latest && (cut.Whole == nil || f.MaxTime >= *cut.Whole) {
			m.rep.Picks = append(m.rep.Picks, Pick{Path: f.Path, Partition: f.Partition, Action: "set_aside", Bytes: f.Size, Rows: f.Rows,
				Reason: "may hold rows past retention, but it is set aside after failed rewrites (siglake skipped list): not read"})
			m.rep.SetAside++
		}
	}
	mayHold := func(p string) bool { return !skipped[p] && !m.knownClean(m.rep.Table, m.live[p], m.key) }
	if len(m.pol.Rules) == 0 {
		return mayHold, nil
	}
	// Rules narrow what may be past retention by column values: let scan planning rule files
	// out by their column bounds before any is read.
	expr, err := Expr(m.classes, t.Schema(), lake.TimestampColumn)
	if err != nil {
		return nil, err
	}
	tasks, err := lake.PlanDataFiles(ctx, t, expr)
	if err != nil {
		return nil, fmt.Errorf("plan retention candidates of %s: %w", m.rep.Table, err)
	}
	cand := make(map[string]bool, len(tasks))
	for _, task := range tasks {
		cand[task.File.FilePath()] = true
	}
	return func(p string) bool { return cand[p] && mayHold(p) }, nil
}

// open opens t for reading and writing its files.
func (m *removal) open(ctx context.Context, t *table.Table) error {
	m.filter = RowFilter(m.classes)
	src, err := filtered.Open(ctx, t)
	if err != nil {
		return err
	}
	wfs, ok := src.FS.(icebergio.WriteFileIO)
	if !ok {
		return fmt.Errorf("FileIO of %s cannot write", t.Location())
	}
	m.src, m.wfs = src, wfs
	return nil
}

// execute drops, rewrites and reports what the planner decided.
func (m *removal) execute(ctx context.Context, rp plan.RetentionPlan) error {
	if err := m.drop(ctx, rp.Drops); err != nil {
		return err
	}
	var firstErr error
	for _, pick := range rp.Rewrites {
		if ctx.Err() != nil {
			break
		}
		if err := m.examine(ctx, pick); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, pick := range rp.Capped {
		m.rep.Picks = append(m.rep.Picks, Pick{Path: pick.File.Path, Partition: pick.File.Partition, Action: pick.Path.String(),
			Bytes: pick.File.SizeBytes, Rows: pick.File.Rows, Reason: pick.Reason})
	}
	if m.o.Apply && len(m.rep.Snapshots) > 0 {
		// The age gauge is of what stays: read the live files again.
		if err := m.oldest(ctx, m.rep.Table, m.rep); err != nil && firstErr == nil {
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
	rep.OldestRow = oldestRow(files)
	return nil
}

// examine counts a straddling file's rows past retention and, if any and applying, rewrites it
// without them through the filtered rewriter; the replaced file goes on the pending list in the
// same commit.
func (m *removal) examine(ctx context.Context, pick plan.RetentionPick) error {
	f := m.live[pick.File.Path]
	pk := Pick{Path: f.Path, Partition: f.Partition, Action: pick.Path.String(), Bytes: f.Size, Rows: f.Rows, Reason: pick.Reason}
	rd := filtered.Read{Kind: level.KindRetention.String(), File: f, Filter: m.filter}
	per, err := m.Count(ctx, m.src, rd, m.o.Apply)
	if err != nil {
		pk.Result = "failed: " + err.Error()
		m.rep.Picks = append(m.rep.Picks, pk)
		return fmt.Errorf("count rows past retention in %s: %w", f.Path, err)
	}
	for _, n := range per {
		pk.Expired += n
	}
	switch {
	case pk.Expired == 0:
		pk.Result = "no rows past retention: not rewritten"
		if m.o.Policy == nil { // read under the stored policy: later runs need not read it again
			m.markClean(m.rep.Table, f, m.key)
		}
	case !m.o.Apply:
		pk.Result = "would rewrite (dry run)"
		m.rep.count(plan.RetentionRewrite.String(), 1, pk.Expired, 0)
	case pk.Expired == f.Rows:
		// Every row is past its class's cutoff (rules keep none of them): a drop, no rewrite; the
		// drop reports the file.
		return m.drop(ctx, []plan.RetentionPick{{File: pick.File, Path: plan.RetentionFile, Reason: "every row past its class's cutoff"}})
	default:
		err = m.rewriteFile(ctx, rd, &pk)
	}
	m.rep.Picks = append(m.rep.Picks, pk)
	return err
}

// rewriteFile rewrites rd.File without its rows past retention, recording the replaced file as
// pending deletion in the same commit.
func (m *removal) rewriteFile(ctx context.Context, rd filtered.Read, pk *Pick) error {
	f := rd.File
	entry := pending.New(m.Now(), f.Size)
	out := m.Rewrite(ctx, m.src, filtered.Rewrite{
		Read:            rd,
		Generation:      f.Generation + 1,
		TargetFileBytes: m.Cfg.TargetFileBytes,
		Metadata:        m.Cfg.Metadata,
		Reason:          "rows past retention",
		Props: func(res merge.RewriteResult) iceberg.Properties {
			return iceberg.Properties{tableprops.SumRetentionRows: strconv.FormatInt(filtered.Removed(res), 10), tableprops.SumRetentionPending: entry.ID}
		},
		Stage: func(res merge.RewriteResult, cur *table.Table, txn *table.Transaction) error {
			entry.After(cur)
			_, err := pending.Stage(txn, nil, m.src.Table.Location(), entry, []string{f.Path})
			return err
		},
		RowsField: "rows_past_retention",
	})
	switch err := out.Error(); {
	case err == nil:
		dropped := filtered.Removed(out.Merge)
		// The outputs hold no row past retention under this key: the next run need not read them.
		for _, o := range out.Merge.Outputs {
			m.markClean(m.rep.Table, lake.File{Path: o.Path}, m.key)
		}
		pk.Result = fmt.Sprintf("rewritten into %d files without %d rows, snapshot %d", len(out.Merge.Outputs), dropped, out.SnapshotID)
		m.rep.Snapshots = append(m.rep.Snapshots, out.SnapshotID)
		m.rep.count(plan.RetentionRewrite.String(), 1, dropped, f.Size)
		return nil
	case errors.Is(err, rewrite.ErrConflict):
		pk.Result = "conflict: " + err.Error()
		m.rep.Conflicts++
		return nil
	default:
		pk.Result = "failed: " + err.Error()
		return fmt.Errorf("retention rewrite of %s: %w", f.Path, err)
	}
}
