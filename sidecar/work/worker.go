package work

import (
	"context"
	"sync"
	"time"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// Bounds of the worker's queues: beyond them a message is dropped (leases lapse and are offered
// again; a lost answer keeps the outputs for orphan gc).
const (
	workerLeases  = 16 // leases messages waiting for the loop
	workerOutbox  = 256
	workerPerPeer = 64
)

// DefaultPoll is how often an idle worker asks the owners with offers for bins.
const DefaultPoll = time.Second

// Merge is what a worker's merge of a grant did.
type Merge struct {
	// Files are the outputs in iceberg-go's cross-process encoding; none when Err is set (the
	// merge removed what it wrote).
	Files                                 [][]byte
	BytesRead, BytesWritten, SplicedBytes int64
	Took                                  time.Duration
	Err                                   error
	// Discard removes the outputs, for a result that will not commit.
	Discard func(ctx context.Context)
}

// WorkerConfig is what a Worker asks and merges with.
type WorkerConfig struct {
	Catalog string // this process's catalog identity; leases of another catalog are not run
	// Owners are the members with bins on offer (gossip meta wk), this member included if it is.
	Owners func() []string
	// Budget is the worker's ask now: its free merge memory, what one merge reserves, the largest
	// bin it takes (sidecar/membudget's free bytes and SIGLAKE_MERGE_MEMORY_BYTES).
	Budget func() Want
	// Merge merges g's job (rewrite.FromLease then rewrite.Executor.Merge, encoding the outputs);
	// ctx ends when the owner answers the lease expired or conflicting meanwhile, or the worker
	// stops, and Merge must return then (Run waits for it). It calls merging once it holds its
	// memory and merges: until then the bin waits for memory (Merging); one that never calls it
	// counts as merging when it returns.
	Merge func(ctx context.Context, g Grant, merging func()) Merge
	Poll  time.Duration // how often an idle worker asks; 0: DefaultPoll
	// AnswerWait is how long a result waits for its answer before the outputs are left to orphan
	// gc (the answer was lost); 0: one lease duration.
	AnswerWait time.Duration
	Now        func() time.Time
	// Done is told how each lease ended: the answer's outcome, or "lapsed" (the lease lapsed
	// before the result was sent), "lost" (no answer), "refused" (of another catalog); nil: nobody.
	Done func(g Grant, outcome string)
	// Started is told of each lease from owner the worker starts (then Merging at most once,
	// then Done, once); nil: nobody.
	Started func(owner string, g Grant)
	// Merging is told when a started lease's merge holds its memory (or returned without): an
	// operator tells a busy worker from one starved of memory by the bins between Started and
	// Merging. nil: nobody.
	Merging func(g Grant)
	// Merged is told what each merge returned, before its result is sent; nil: nobody.
	Merged func(g Grant, m Merge)
	// Dropped is told of every message dropped by a full queue or a failed send; nil: nobody.
	Dropped func()
}

// Worker outcomes that are not answers.
const (
	WorkerLapsed  = "lapsed"
	WorkerLost    = "lost"
	WorkerRefused = "refused" // a lease of another catalog: not run (never started)
)

// Worker asks the owners with offers for bins its free budget holds, merges each leased bin
// through the caller's Merge, renews the lease every third of its duration while it merges,
// sends the result and removes the outputs when the owner cannot commit them
// (docs/format/bin-lease-messages.md "Receive rules"): its lease lapsed before it sent the result,
// or the answer is expired, conflict or failed. A lost answer or maybe_committed keeps them.
type Worker struct {
	cfg    WorkerConfig
	tr     peermsg.Transport
	out    *peermsg.Outbox
	leases chan leasesFrom

	mu      sync.Mutex
	answers map[string]chan OwnerMessage // by lease id, while the worker runs it
	waiting map[string]bool              // lease ids started whose merge does not hold its memory yet
	wg      sync.WaitGroup
}

type leasesFrom struct {
	from string
	m    OwnerMessage
	sent time.Time // when the want was sent: a lease's deadline is no earlier than this plus its duration
}

// NewWorker returns a worker on tr; Run starts it.
func NewWorker(cfg WorkerConfig, tr peermsg.Transport) *Worker {
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Done == nil {
		cfg.Done = func(Grant, string) {}
	}
	if cfg.Started == nil {
		cfg.Started = func(string, Grant) {}
	}
	if cfg.Merging == nil {
		cfg.Merging = func(Grant) {}
	}
	if cfg.Merged == nil {
		cfg.Merged = func(Grant, Merge) {}
	}
	if cfg.Dropped == nil {
		cfg.Dropped = func() {}
	}
	return &Worker{cfg: cfg, tr: tr, out: peermsg.NewOutbox(tr, workerOutbox, workerPerPeer, cfg.Dropped),
		leases: make(chan leasesFrom, workerLeases), answers: map[string]chan OwnerMessage{}, waiting: map[string]bool{}}
}

// Run asks, merges and returns bins until ctx is done; the merges in flight then end (ctx is
// theirs) and Run returns when they have.
func (w *Worker) Run(ctx context.Context) error {
	stop, sent := make(chan struct{}), make(chan struct{})
	go func() { defer close(sent); w.out.Run(stop) }()
	w.tr.Handle(KindOwner, w.receive)
	tick := time.NewTicker(w.cfg.Poll)
	defer tick.Stop()
	var asked asking
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			w.ask(&asked)
		case l := <-w.leases:
			if l.from != asked.owner {
				continue // not the answer to the want outstanding: its leases lapse
			}
			l.sent = asked.at
			asked.answered(l.m, w.cfg.Now())
			for _, g := range l.m.Leases {
				if l.m.Catalog != w.cfg.Catalog {
					w.cfg.Done(g, WorkerRefused)
					continue
				}
				w.start(ctx, l.from, g, l.sent)
			}
		}
	}
	w.wg.Wait()
	w.tr.Handle(KindOwner, func(string, []byte) {})
	close(stop)
	<-sent
	return nil
}

// asking is the worker's one want outstanding and when each owner may be asked again.
type asking struct {
	owner string
	at    time.Time
	next  map[string]time.Time
	turn  int
}

func (a *asking) answered(m OwnerMessage, now time.Time) {
	if len(m.Leases) == 0 && m.RetryMs > 0 {
		a.next[a.owner] = now.Add(time.Duration(m.RetryMs) * time.Millisecond)
	}
	a.owner = ""
}

// ask sends a want to the next owner with offers whose retry has passed, unless a want is
// outstanding (for less than two polls) or the budget holds no merge: one owner at a time, so
// two owners never lease the same free budget.
func (w *Worker) ask(a *asking) {
	now := w.cfg.Now()
	if a.next == nil {
		a.next = map[string]time.Time{}
	}
	if a.owner != "" && now.Sub(a.at) < 2*w.cfg.Poll {
		return
	}
	a.owner = ""
	// Leases granted whose merge does not hold its memory yet (loading the table, waiting for
	// the budget) are not in the budget's held bytes: their share counts as spent, or the worker
	// would ask for bins it cannot merge every second while they wait. Merging ones are in the
	// held bytes already, and those waiting on the owner's answer hold none. Read before the
	// budget: a merge that takes its memory in between is then counted twice (asking for too
	// little), never in neither (asking for a merge too many).
	w.mu.Lock()
	waiting := int64(len(w.waiting))
	w.mu.Unlock()
	want := w.cfg.Budget()
	want.FreeBytes = max(want.FreeBytes-waiting*want.MergeBytes, 0)
	if want.Slots() == 0 {
		return
	}
	owners := w.cfg.Owners()
	for i := range owners {
		o := owners[(a.turn+i)%len(owners)]
		if now.Before(a.next[o]) {
			continue
		}
		a.turn = (a.turn + i + 1) % len(owners)
		msg, err := WorkerMessage{V: Version, Type: TypeWant, From: w.tr.Name(), Catalog: w.cfg.Catalog,
			FreeBytes: want.FreeBytes, MergeBytes: want.MergeBytes, MaxBinBytes: want.MaxBinBytes}.Encode()
		if err != nil {
			return
		}
		a.owner, a.at = o, now
		w.out.Post(o, msg)
		return
	}
}

// receive is the transport's handler: it must not block.
func (w *Worker) receive(from string, msg []byte) {
	m, err := DecodeOwner(msg)
	if err != nil {
		return
	}
	switch m.Type {
	case TypeLeases:
		select {
		case w.leases <- leasesFrom{from: from, m: m}:
		default: // the leases lapse
			w.cfg.Dropped()
		}
	case TypeAnswer:
		w.mu.Lock()
		ch := w.answers[m.Lease]
		w.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default:
			}
		}
	}
}

// start runs g from owner on a goroutine of its own.
func (w *Worker) start(ctx context.Context, owner string, g Grant, asked time.Time) {
	ch := make(chan OwnerMessage, 4)
	w.mu.Lock()
	w.answers[g.ID] = ch
	w.waiting[g.ID] = true
	w.mu.Unlock()
	w.wg.Add(1)
	w.cfg.Started(owner, g)
	var once sync.Once
	merging := func() {
		once.Do(func() {
			w.mu.Lock()
			delete(w.waiting, g.ID)
			w.mu.Unlock()
			w.cfg.Merging(g)
		})
	}
	go func() {
		defer w.wg.Done()
		outcome := w.run(ctx, owner, g, asked, ch, merging)
		w.mu.Lock()
		delete(w.answers, g.ID)
		delete(w.waiting, g.ID)
		w.mu.Unlock()
		w.cfg.Done(g, outcome)
	}()
}

// run merges g while renewing it, sends the result and waits for its answer; it returns how the
// lease ended.
func (w *Worker) run(ctx context.Context, owner string, g Grant, asked time.Time, answers <-chan OwnerMessage, merging func()) string {
	d := g.Duration()
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	merged := make(chan Merge, 1)
	go func() { merged <- w.cfg.Merge(mctx, g, merging) }()
	renew := time.NewTicker(max(d/3, time.Millisecond))
	defer renew.Stop()
	// The lease is surely live until the last renewal sent plus its duration: the owner extends
	// it when the renewal arrives, after it was sent.
	lastSent := asked
	var res Merge
	for got := false; !got; {
		select {
		case res = <-merged:
			merging() // waiting on the answer now, if the merge never said it held memory
			w.cfg.Merged(g, res)
			got = true
		case <-renew.C:
			w.send(owner, WorkerMessage{V: Version, Type: TypeRenew, From: w.tr.Name(), Catalog: w.cfg.Catalog, Lease: g.ID})
			lastSent = w.cfg.Now()
		case a := <-answers:
			if a.Outcome == OutcomeExpired || a.Outcome == OutcomeConflict {
				cancel() // the merge fails and removes what it wrote
				res = <-merged
				w.cfg.Merged(g, res)
				discard(ctx, res)
				return a.Outcome
			}
		}
	}
	result := WorkerMessage{V: Version, Type: TypeResult, From: w.tr.Name(), Catalog: w.cfg.Catalog, Lease: g.ID,
		BytesRead: res.BytesRead, BytesWritten: res.BytesWritten, SplicedBytes: res.SplicedBytes, TookMs: res.Took.Milliseconds()}
	switch {
	case res.Err != nil:
		result.Status, result.Error = StatusFailed, res.Err.Error()
		if len(result.Error) > maxErrorBytes {
			result.Error = result.Error[:maxErrorBytes]
		}
	case !w.cfg.Now().Before(lastSent.Add(d)):
		// The lease may have lapsed: a result would be refused, and nobody else removes these.
		discard(ctx, res)
		return WorkerLapsed
	default:
		result.Status, result.Files = StatusMerged, res.Files
	}
	if !w.send(owner, result) {
		discard(ctx, res) // never sent: nobody commits them
		return WorkerLost
	}
	return w.await(ctx, res, answers, d)
}

// await waits for the result's answer and removes the outputs when the owner did not commit them.
func (w *Worker) await(ctx context.Context, res Merge, answers <-chan OwnerMessage, d time.Duration) string {
	wait := w.cfg.AnswerWait
	if wait <= 0 {
		wait = d
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		select {
		case a := <-answers:
			switch a.Outcome {
			case OutcomeExpired, OutcomeConflict, OutcomeFailed:
				discard(ctx, res)
			}
			return a.Outcome
		case <-timeout.C:
			return WorkerLost // the commit may have landed: orphan gc judges the outputs
		case <-ctx.Done():
			return WorkerLost
		}
	}
}

func discard(ctx context.Context, res Merge) {
	if res.Discard != nil && len(res.Files) > 0 {
		res.Discard(context.WithoutCancel(ctx))
	}
}

// send posts m to owner; false if it could not be encoded (a result too large for a message).
func (w *Worker) send(owner string, m WorkerMessage) bool {
	msg, err := m.Encode()
	if err != nil {
		w.cfg.Dropped()
		return false
	}
	w.out.Post(owner, msg)
	return true
}
