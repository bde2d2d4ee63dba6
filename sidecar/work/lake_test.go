package work_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/peermsg"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/work"
)

// The tests below run an owner and workers in one process on a LocalHub, over a real embedded
// lake: each worker is a lake.Lake of its own on the same catalog and warehouse (another
// process), merging through rewrite.Executor.Merge; the owner commits with Executor.Commit.

const leaseTable = "events"

var leaseDay = time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)

// leaseEnv is a lake with an owner process's side of bin leases.
type leaseEnv struct {
	t     *testing.T
	env   *testlake.Env
	hub   *peermsg.LocalHub
	book  *work.Book
	owner *work.Owner

	mu     sync.Mutex
	jobs   map[string]rewrite.Job // the owner's own job of each bin offered, by its inputs
	before int64                  // rows before any rewrite
}

func newLeaseEnv(t *testing.T, files int, minDuration time.Duration) *leaseEnv {
	t.Helper()
	env := testlake.New(t)
	env.SealRows(leaseTable, files, 400, 11, leaseDay)
	env.DrainAll()
	e := &leaseEnv{t: t, env: env, hub: peermsg.NewLocalHub(), jobs: map[string]rewrite.Job{}}
	e.book = work.NewBook(work.Config{MinDuration: minDuration, OwnerWait: time.Hour}, rand.NewChaCha8([32]byte{1}))
	exec := &rewrite.Executor{Lake: env.Lake, Now: time.Now}
	e.owner = work.NewOwner(work.OwnerConfig{Book: e.book, Catalog: "cat", Tick: 20 * time.Millisecond, Retry: 50 * time.Millisecond,
		Check: func(ctx context.Context, l work.Lease, files [][]byte) error {
			tbl, job, dfs, err := e.decode(ctx, l, files)
			if err != nil {
				return err
			}
			return rewrite.CheckOutputs(tbl, job, dfs)
		},
		Commit: func(ctx context.Context, l work.Lease, m work.WorkerMessage) work.CommitResult {
			tbl, job, dfs, err := e.decode(ctx, l, m.Files)
			if err != nil {
				return work.CommitResult{Outcome: work.OutcomeFailed, Err: err}
			}
			out := exec.Commit(ctx, tbl, job, rewrite.Received(dfs, rewrite.Stats{BytesRead: m.BytesRead, BytesWritten: m.BytesWritten}))
			return commitResult(out)
		},
		Remove: func(ctx context.Context, l work.Lease, files [][]byte) {
			tbl, job, dfs, err := e.decode(ctx, l, files)
			if err == nil {
				_, err = rewrite.RemoveRefused(ctx, tbl, job, dfs)
			}
			if err != nil {
				t.Logf("remove refused outputs of lease %s: %v", l.ID, err)
			}
		},
	}, e.hub.Member("owner"))
	e.before = e.rows()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.owner.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the owner's handler", func() bool { return e.hub.Member("owner").Handles(work.KindWorker) })
	return e
}

func commitResult(out rewrite.Outcome) work.CommitResult {
	switch out.Status {
	case rewrite.Committed:
		return work.CommitResult{Outcome: work.OutcomeCommitted}
	case rewrite.Conflict:
		return work.CommitResult{Outcome: work.OutcomeConflict, Err: out.Err, Removed: true}
	case rewrite.MaybeCommitted:
		return work.CommitResult{Outcome: work.OutcomeMaybeCommitted, Err: out.Err}
	}
	return work.CommitResult{Outcome: work.OutcomeFailed, Err: out.Err, Removed: true}
}

func key(paths []string) string {
	slices.Sort(paths)
	return strings.Join(paths, "\x00")
}

func leaseKey(j work.Job) string {
	var ps []string
	for _, in := range j.Inputs {
		ps = append(ps, in.Path)
	}
	return key(ps)
}

// decode is l's bin as the owner planned it and the files of its result, on the newest head.
func (e *leaseEnv) decode(ctx context.Context, l work.Lease, files [][]byte) (*table.Table, rewrite.Job, []iceberg.DataFile, error) {
	e.mu.Lock()
	job, ok := e.jobs[leaseKey(l.Job)]
	e.mu.Unlock()
	if !ok {
		return nil, rewrite.Job{}, nil, errors.New("no bin of the owner's for the lease")
	}
	tbl, err := e.env.Lake.LoadTable(ctx, l.Table)
	if err != nil {
		return nil, rewrite.Job{}, nil, err
	}
	dfs, err := rewrite.DecodeOutputs(tbl, files)
	return tbl, job, dfs, err
}

// pass offers the table's live files not in flight, in bins of per files, and returns how many
// bins it offered.
func (e *leaseEnv) pass(per int) int {
	e.t.Helper()
	ctx := context.Background()
	tbl := e.env.Table(leaseTable)
	files, err := lake.LiveFiles(ctx, tbl)
	if err != nil {
		e.t.Fatal(err)
	}
	flying := e.owner.InFlight(leaseTable)
	var plannable []lake.File
	for _, f := range files {
		if !flying[f.Path] && f.Generation == 0 {
			plannable = append(plannable, f)
		}
	}
	slices.SortFunc(plannable, func(a, b lake.File) int { return strings.Compare(a.Path, b.Path) })
	var jobs []work.Job
	e.mu.Lock()
	for i := 0; i+per <= len(plannable); i += per {
		in := plannable[i : i+per]
		j := rewrite.Job{Kind: "l0", Partition: in[0].Partition, Inputs: in, Generation: 1, Dir: lake.DataDir(tbl, in[0].Partition),
			Metadata: lake.WriteMetadata(tbl, false, 1<<20)}
		wj, err := rewrite.Leasable(j)
		if err != nil {
			e.t.Fatal(err)
		}
		e.jobs[leaseKey(wj)] = j
		jobs = append(jobs, wj)
	}
	e.mu.Unlock()
	if refused := e.owner.Offer(leaseTable, jobs); len(refused) > 0 {
		e.t.Fatalf("offer refused %d bins: %v", len(refused), refused[0].Err)
	}
	return len(jobs)
}

func (e *leaseEnv) rows() int64 {
	e.t.Helper()
	files, err := lake.LiveFiles(context.Background(), e.env.Table(leaseTable))
	if err != nil {
		e.t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		n += f.Rows
	}
	return n
}

func (e *leaseEnv) live() map[string]int {
	e.t.Helper()
	files, err := lake.LiveFiles(context.Background(), e.env.Table(leaseTable))
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range files {
		out[f.Path] = f.Generation
	}
	return out
}

// workerProc is one worker process: its own lake and transport.
type workerProc struct {
	w      *work.Worker
	name   string
	mu     sync.Mutex
	ends   []string            // how each lease ended
	wrote  map[string][]string // outputs written, by lease id
	cancel context.CancelFunc
	done   chan struct{}
}

// workerHooks change what a test worker does: before returns the merge (after the real merge
// ran); discard replaces its removal of outputs.
type workerHooks struct {
	afterMerge func(ctx context.Context, g work.Grant)
	files      func(tbl *table.Table, files [][]byte) [][]byte
	discard    func(paths []string)
	answerWait time.Duration
	paused     *atomic.Bool // while set, the worker asks for nothing (a paused process does not)
}

func (e *leaseEnv) startWorker(name string, h workerHooks) *workerProc {
	e.t.Helper()
	l, err := lake.Open(context.Background(), e.env.Cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { l.Close() })
	p := &workerProc{name: name, wrote: map[string][]string{}, done: make(chan struct{})}
	exec := &rewrite.Executor{Lake: l, Now: time.Now}
	p.w = work.NewWorker(work.WorkerConfig{Catalog: "cat", Poll: 20 * time.Millisecond, AnswerWait: h.answerWait,
		Owners: func() []string { return []string{"owner"} },
		Budget: func() work.Want {
			if h.paused != nil && h.paused.Load() {
				return work.Want{MergeBytes: 1}
			}
			return work.Want{FreeBytes: 1 << 30, MergeBytes: 1 << 29}
		},
		Merge: func(ctx context.Context, g work.Grant, _ func()) work.Merge {
			tbl, err := l.LoadTable(ctx, g.Table)
			if err != nil {
				return work.Merge{Err: err}
			}
			job, err := rewrite.FromLease(tbl, g.Job)
			if err != nil {
				return work.Merge{Err: err}
			}
			m, out := exec.Merge(ctx, tbl, job)
			if out.Status != rewrite.Uncommitted {
				return work.Merge{Err: out.Error()}
			}
			var paths []string
			for _, o := range out.Merge.Outputs {
				paths = append(paths, o.Path)
			}
			p.mu.Lock()
			p.wrote[g.ID] = paths
			p.mu.Unlock()
			if h.afterMerge != nil {
				h.afterMerge(ctx, g)
			}
			files, err := rewrite.EncodeOutputs(tbl, m)
			if err != nil {
				return work.Merge{Err: err}
			}
			if h.files != nil {
				files = h.files(tbl, files)
			}
			return work.Merge{Files: files, BytesRead: out.Merge.BytesRead, BytesWritten: out.Merge.BytesWritten, Took: out.Took,
				Discard: func(ctx context.Context) {
					if h.discard != nil {
						h.discard(paths)
						return
					}
					for _, p := range paths {
						_ = os.Remove(testlake.LocalPath(p))
					}
				}}
		},
		Done: func(g work.Grant, outcome string) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.ends = append(p.ends, outcome)
		},
	}, e.hub.Member(name))
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { defer close(p.done); _ = p.w.Run(ctx) }()
	e.t.Cleanup(p.stop)
	return p
}

func (p *workerProc) stop() {
	p.cancel()
	<-p.done
}

func (p *workerProc) ended() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ends)
}

func (p *workerProc) outputs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, ps := range p.wrote {
		out = append(out, ps...)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exists(p string) bool {
	_, err := os.Stat(testlake.LocalPath(p))
	return err == nil
}

// check holds the table to rows exactly once: its rows the ones drained, its files the generation
// written by committed bins and the inputs no bin replaced.
func (e *leaseEnv) check(wantBinsDone int) {
	e.t.Helper()
	if got := e.rows(); got != e.before {
		e.t.Fatalf("%d rows in the table, want the %d drained", got, e.before)
	}
	gen1 := 0
	for p, g := range e.live() {
		if g == 1 {
			gen1++
		}
		if !exists(p) {
			e.t.Fatalf("live file %s is not in the warehouse", p)
		}
	}
	if gen1 < wantBinsDone {
		e.t.Fatalf("%d live outputs, want at least one for each of %d bins", gen1, wantBinsDone)
	}
}

func countOf(ends []string, outcome string) int {
	n := 0
	for _, o := range ends {
		if o == outcome {
			n++
		}
	}
	return n
}

// TestLeasedBinsCommitted: bins offered by the owner are merged on two workers and committed by
// the owner: every input replaced once, the rows exactly the drained ones, nothing in flight.
func TestLeasedBinsCommitted(t *testing.T) {
	e := newLeaseEnv(t, 6, time.Minute)
	sum := e.env.Sum(leaseTable)
	if n := e.pass(2); n != 3 {
		t.Fatalf("offered %d bins, want 3", n)
	}
	w1, w2 := e.startWorker("w1", workerHooks{}), e.startWorker("w2", workerHooks{})
	waitFor(t, "three committed bins", func() bool {
		return countOf(w1.ended(), work.OutcomeCommitted)+countOf(w2.ended(), work.OutcomeCommitted) == 3
	})
	e.check(3)
	if got := e.env.Sum(leaseTable); got != sum {
		t.Fatalf("rows %+v after the bins, want %+v", got, sum)
	}
	for p, g := range e.live() {
		if g != 1 {
			t.Fatalf("live file %s of generation %d: an input was not replaced", p, g)
		}
	}
	if len(e.owner.InFlight(leaseTable)) != 0 || e.book.Outstanding(leaseTable) != (work.Outstanding{}) {
		t.Fatalf("after every bin: in flight %v, outstanding %+v", e.owner.InFlight(leaseTable), e.book.Outstanding(leaseTable))
	}
}

// from drops every message from member while on (a killed or paused process sends nothing).
type silence struct {
	mu  sync.Mutex
	off map[string]func(peermsg.LocalMessage) bool
}

func (s *silence) filter(m peermsg.LocalMessage) peermsg.Fate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.off[m.From]; f != nil && f(m) {
		return peermsg.Fate{Drop: true}
	}
	return peermsg.Fate{}
}

func (s *silence) set(member string, f func(peermsg.LocalMessage) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off == nil {
		s.off = map[string]func(peermsg.LocalMessage) bool{}
	}
	s.off[member] = f
}

func all(peermsg.LocalMessage) bool { return true }

// TestKilledWorkerBinDoneOnce: a worker killed mid-bin sends nothing more; its lease expires, the
// next pass offers the bin again, another worker merges it and the owner commits it, once.
func TestKilledWorkerBinDoneOnce(t *testing.T) {
	e := newLeaseEnv(t, 2, 300*time.Millisecond)
	var s silence
	e.hub.SetFilter(s.filter)
	merged := make(chan struct{})
	var once sync.Once
	w1 := e.startWorker("w1", workerHooks{afterMerge: func(ctx context.Context, _ work.Grant) {
		s.set("w1", all) // killed: no renewal, no result
		once.Do(func() { close(merged) })
		<-ctx.Done()
	}})
	if n := e.pass(2); n != 1 {
		t.Fatalf("offered %d bins, want 1", n)
	}
	<-merged
	killed := w1.outputs()
	waitFor(t, "the lease to expire", func() bool { return len(e.owner.InFlight(leaseTable)) == 0 })
	if n := e.pass(2); n != 1 {
		t.Fatalf("the next pass offered %d bins, want the expired one", n)
	}
	w2 := e.startWorker("w2", workerHooks{})
	waitFor(t, "the bin on the second worker", func() bool { return countOf(w2.ended(), work.OutcomeCommitted) == 1 })
	w1.stop()
	e.check(1)
	live := e.live()
	for _, p := range killed {
		if _, ok := live[p]; ok {
			t.Fatalf("output %s of the killed worker is live", p)
		}
	}
	for _, p := range w2.outputs() {
		if live[p] != 1 {
			t.Fatalf("output %s of the second worker is not live", p)
		}
	}
}

// TestPausedWorkerLateResultRefused: a worker paused past its lease (no renewals arrive) resumes
// and sends its result after the bin was merged and committed elsewhere: the owner answers
// expired, commits nothing of it, and removes the outputs it names (the worker's own removal, on
// the expired answer, only records here, so the owner's removed them); the rows are there once.
func TestPausedWorkerLateResultRefused(t *testing.T) {
	e := newLeaseEnv(t, 2, 300*time.Millisecond)
	var s silence
	e.hub.SetFilter(s.filter)
	s.set("w1", func(m peermsg.LocalMessage) bool { return strings.Contains(string(m.Msg), `"type":"renew"`) })
	merged, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var selfRemoved []string
	var mu sync.Mutex
	var paused atomic.Bool
	w1 := e.startWorker("w1", workerHooks{
		paused: &paused,
		afterMerge: func(ctx context.Context, _ work.Grant) {
			paused.Store(true)
			once.Do(func() { close(merged) })
			<-resume
		},
		discard: func(paths []string) {
			mu.Lock()
			defer mu.Unlock()
			selfRemoved = append(selfRemoved, paths...)
		},
	})
	var resumed sync.Once
	t.Cleanup(func() { resumed.Do(func() { close(resume) }) })
	e.pass(2)
	<-merged
	waitFor(t, "the paused worker's lease to expire", func() bool { return len(e.owner.InFlight(leaseTable)) == 0 })
	e.pass(2)
	// The answer may take longer than the short lease on a loaded machine (the wait defaults to
	// the lease's duration), and a renewal may come later than the lease, which then ends and
	// returns the bin: w2 waits longer, and the bin is planned again while nothing is in flight,
	// as the owner's passes would.
	w2 := e.startWorker("w2", workerHooks{answerWait: 30 * time.Second})
	planned := time.Now()
	waitFor(t, "the bin on the second worker", func() bool {
		if countOf(w2.ended(), work.OutcomeCommitted) == 1 {
			return true
		}
		if time.Since(planned) > time.Second && len(e.owner.InFlight(leaseTable)) == 0 {
			e.pass(2)
			planned = time.Now()
		}
		return false
	})
	late := w1.outputs()
	resumed.Do(func() { close(resume) }) // the worker resumes and sends its result
	waitFor(t, "the late result's answer", func() bool { return len(w1.ended()) == 1 })
	if got := w1.ended()[0]; got != work.OutcomeExpired {
		t.Fatalf("the late result ended %s, want %s", got, work.OutcomeExpired)
	}
	for _, p := range late {
		if exists(p) {
			t.Fatalf("late output %s is still in the warehouse", p)
		}
	}
	e.check(1)
	live := e.live()
	for _, p := range late {
		if _, ok := live[p]; ok {
			t.Fatalf("late output %s is live", p)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(selfRemoved) != len(late) {
		t.Fatalf("the worker discarded %v on the expired answer, want its outputs %v", selfRemoved, late)
	}
}

// TestLostAnswerKeepsOutputs: the owner commits a result whose answer never arrives; the worker
// keeps its outputs (the commit landed: they are live) and the rows are there once.
func TestLostAnswerKeepsOutputs(t *testing.T) {
	e := newLeaseEnv(t, 2, time.Minute)
	var s silence
	e.hub.SetFilter(s.filter)
	s.set("owner", func(m peermsg.LocalMessage) bool { return strings.Contains(string(m.Msg), `"type":"answer"`) })
	w1 := e.startWorker("w1", workerHooks{answerWait: 300 * time.Millisecond})
	e.pass(2)
	waitFor(t, "the worker to give up on the answer", func() bool { return len(w1.ended()) == 1 })
	if got := w1.ended()[0]; got != work.WorkerLost {
		t.Fatalf("the lease ended %s, want %s", got, work.WorkerLost)
	}
	e.check(1)
	live := e.live()
	for _, p := range w1.outputs() {
		if !exists(p) || live[p] != 1 {
			t.Fatalf("output %s: in the warehouse %v, live %v; want both", p, exists(p), live[p] == 1)
		}
	}
}

// TestForgedSenderRefused: a member naming another in its message is not answered, and one sending
// a result for a live lease it does not hold is answered expired; neither commits nor removes
// anything, and the holder's result then commits.
func TestForgedSenderRefused(t *testing.T) {
	e := newLeaseEnv(t, 2, time.Minute)
	resume := make(chan struct{})
	w1 := e.startWorker("w1", workerHooks{afterMerge: func(context.Context, work.Grant) { <-resume }})
	var resumed sync.Once
	t.Cleanup(func() { resumed.Do(func() { close(resume) }) }) // runs before the worker's stop
	e.pass(2)
	waitFor(t, "the lease", func() bool { return len(e.book.Leases(leaseTable)) == 1 })
	lease := e.book.Leases(leaseTable)[0]
	evil := e.hub.Member("evil")
	answers := make(chan work.OwnerMessage, 4)
	evil.Handle(work.KindOwner, func(_ string, msg []byte) {
		if m, err := work.DecodeOwner(msg); err == nil {
			answers <- m
		}
	})
	tbl := e.env.Table(leaseTable)
	input := lease.Job.Inputs[0].Path
	files, err := rewrite.EncodeOutputs(tbl, rewrite.Received([]iceberg.DataFile{e.dataFile(input)}, rewrite.Stats{}))
	if err != nil {
		t.Fatal(err)
	}
	result := func(from string) []byte {
		msg, err := work.WorkerMessage{V: work.Version, Type: work.TypeResult, From: from, Catalog: "cat", Lease: lease.ID,
			Status: work.StatusMerged, Files: files}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	if err := evil.Send("owner", result("w1")); err != nil { // the holder's name, from another member
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the owner takes it up at once, if it takes it
	if ls := e.book.Leases(leaseTable); len(ls) != 1 || ls[0].ID != lease.ID || len(answers) != 0 {
		t.Fatalf("a result naming another member ended the lease (leases %v) or was answered (%d)", ls, len(answers))
	}
	if err := evil.Send("owner", result("evil")); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answers:
		if a.Outcome != work.OutcomeExpired || a.Lease != lease.ID {
			t.Fatalf("the non-holder's result was answered %+v, want expired", a)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the non-holder's result was not answered")
	}
	if !exists(input) || e.live()[input] != 0 {
		t.Fatalf("the input %s named by the forged result was removed or replaced", input)
	}
	resumed.Do(func() { close(resume) })
	waitFor(t, "the holder's result", func() bool { return len(w1.ended()) == 1 })
	if got := w1.ended()[0]; got != work.OutcomeCommitted {
		t.Fatalf("the holder's lease ended %s, want committed", got)
	}
	e.check(1)
}

// dataFile is the live data file at path.
func (e *leaseEnv) dataFile(path string) iceberg.DataFile {
	e.t.Helper()
	files, err := lake.LiveFiles(context.Background(), e.env.Table(leaseTable))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == path {
			return f.DataFile
		}
	}
	e.t.Fatalf("no live file %s", path)
	return nil
}

// TestResultOutsideDirRefused: a result naming a file outside the job's directory (another
// partition's) is answered failed, nothing is committed, and the owner removes nothing it names.
func TestResultOutsideDirRefused(t *testing.T) {
	e := newLeaseEnv(t, 2, time.Minute)
	tbl := e.env.Table(leaseTable)
	otherDir := lake.DataDir(tbl, "2026-12-03")
	other := otherDir + "/" + merge.DataFileName(1)
	if err := os.MkdirAll(testlake.LocalPath(otherDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(testlake.LocalPath(other), []byte("not the job's"), 0o644); err != nil {
		t.Fatal(err)
	}
	w1 := e.startWorker("w1", workerHooks{files: func(tbl *table.Table, files [][]byte) [][]byte {
		b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, other, iceberg.ParquetFile, nil, nil, nil, 10, 13)
		if err != nil {
			t.Error(err)
			return files
		}
		enc, err := rewrite.EncodeOutputs(tbl, rewrite.Received([]iceberg.DataFile{b.Build()}, rewrite.Stats{}))
		if err != nil {
			t.Error(err)
			return files
		}
		return append(files, enc...)
	}})
	e.pass(2)
	waitFor(t, "the answer", func() bool { return len(w1.ended()) == 1 })
	if got := w1.ended()[0]; got != work.OutcomeFailed {
		t.Fatalf("a result naming %s ended %s, want failed", other, got)
	}
	if !exists(other) {
		t.Fatalf("the file %s outside the job's directory was removed", other)
	}
	if got := e.rows(); got != e.before {
		t.Fatalf("%d rows, want %d", got, e.before)
	}
	for p, g := range e.live() {
		if g != 0 {
			t.Fatalf("live file %s of generation %d: the refused result was committed", p, g)
		}
	}
	for _, p := range w1.outputs() {
		if exists(p) {
			t.Fatalf("output %s of the refused result is still in the warehouse: the worker removes its own on failed", p)
		}
	}
}
