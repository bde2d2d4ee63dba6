package work

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// Bounds of the owner's queues: beyond them a message is dropped, not answered (a result's lease
// lapses and its bin is offered again; outputs it named are orphan gc's after its floor).
const (
	ownerResults   = 64   // results waiting for their commit
	ownerOutbox    = 1024 // answers waiting for the outbox's dispatcher
	ownerPerMember = 256  // answers waiting for one member
	endedLeases    = 4096 // ended leases remembered, so a late result of their holder is removed
)

// DefaultRetry is how long a worker given no bins waits before it asks the same owner again.
const DefaultRetry = 5 * time.Second

// CommitResult is what the owner's commit of a result did.
type CommitResult struct {
	Outcome string // OutcomeCommitted, OutcomeConflict, OutcomeFailed or OutcomeMaybeCommitted
	Err     error  // why, for every outcome but committed
	// Removed: the commit removed the outputs itself (rewrite.Executor.Commit does on a conflict
	// or a failed commit); else the owner's Remove does on those outcomes.
	Removed bool
}

// OwnerConfig is what an Owner decides and acts with. The callbacks keep this package pure of
// iceberg: the caller decodes files against the table and runs sidecar/rewrite.
type OwnerConfig struct {
	Book    *Book
	Catalog string // this process's catalog identity (siglake.catalog-id); a worker of another gets nothing
	// Authenticated reports whether the transport is authenticated now (a gossip key, no key
	// migration); without it every message is dropped. nil: always.
	Authenticated func() bool
	// Check says why files (as the result carries them) are not outputs of l's job
	// (rewrite.CheckOutputs); such a result is answered failed and nothing it names is removed:
	// the files need not be the job's.
	Check func(ctx context.Context, l Lease, files [][]byte) error
	// Commit commits a checked result of l in the table's loop (rewrite.Executor.Commit on the
	// owner's own job for l's bin).
	Commit func(ctx context.Context, l Lease, m WorkerMessage) CommitResult
	// Remove removes the outputs files names for l's job: those of a result refused because the
	// sender's lease ended, or of a definite failure the commit left. It must remove only files
	// that are l's job's outputs and not live in the table (rewrite.RemoveRefused).
	Remove func(ctx context.Context, l Lease, files [][]byte)
	// Workers is how many members take leased bins now, this one included: one want gets at
	// most its share of the bins on offer (Book.Share), so the first free worker to ask does not
	// take a whole pass while the others idle. nil: no share (a want gets what its budget holds).
	Workers func() int
	Retry   time.Duration // a want given no bins asks again after this; 0: DefaultRetry
	Tick    time.Duration // how often leases past their deadline are expired; 0: one second
	Now     func() time.Time
	// Dropped is told of every message dropped by a full queue or a failed send; nil: nobody.
	Dropped func()
	// Ended is told of every lease's end, once: the outcome its result was answered (committed,
	// conflict, failed, maybe_committed), EndLapsed when it passed its deadline without one, or
	// EndDropped when the owner dropped its table; nil: nobody.
	Ended func(l Lease, outcome string)
	// Refused is told of every renewal or result refused (answered expired), and why:
	// RefusedNotLive, RefusedNotHolder or RefusedCatalog; nil: nobody.
	Refused func(m WorkerMessage, reason string)
}

// How a lease ended without a result (OwnerConfig.Ended); with a result, the answer's outcome.
const (
	EndLapsed  = "lapsed"  // past its deadline, never renewed or completed: its bin is planned again
	EndDropped = "dropped" // the owner lost the table
)

// Why a renewal or result was refused (OwnerConfig.Refused).
const (
	RefusedNotLive   = "not_live"   // the lease is unknown, past its deadline or ended
	RefusedNotHolder = "not_holder" // another worker holds it
	RefusedCatalog   = "catalog"    // the message is of another catalog
)

// refusedReason is why err (of Book.Renew or Complete) refused a message.
func refusedReason(err error) string {
	if errors.Is(err, ErrNotHolder) {
		return RefusedNotHolder
	}
	return RefusedNotLive
}

// Owner answers workers for the tables this process owns: it leases the bins the caller offers
// (Offer), renews and ends leases, and commits the results of live leases through the caller's
// callbacks (docs/format/bin-lease-messages.md "Receive rules"). The transport's handler never
// blocks: wants and renewals are decided at once, results queue for one commit goroutine, and
// answers leave through an outbox with a sender per member.
type Owner struct {
	cfg     OwnerConfig
	tr      peermsg.Transport
	out     *peermsg.Outbox
	results chan received

	mu    sync.Mutex
	ended map[string]Lease // leases that ended without a result, by id, for their holder's late result
	order []string         // ended's ids, oldest first
}

type received struct {
	m  WorkerMessage
	at time.Time
	// lease is the result's lease, completed on arrival (err: why not), so a result queued
	// behind slow commits does not lapse while it waits: its worker stopped renewing once it
	// sent it.
	lease Lease
	err   error
}

// NewOwner returns an owner answering on tr; Run starts it.
func NewOwner(cfg OwnerConfig, tr peermsg.Transport) *Owner {
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Authenticated == nil {
		cfg.Authenticated = func() bool { return true }
	}
	if cfg.Dropped == nil {
		cfg.Dropped = func() {}
	}
	if cfg.Ended == nil {
		cfg.Ended = func(Lease, string) {}
	}
	if cfg.Refused == nil {
		cfg.Refused = func(WorkerMessage, string) {}
	}
	return &Owner{cfg: cfg, tr: tr, out: peermsg.NewOutbox(tr, ownerOutbox, ownerPerMember, cfg.Dropped),
		results: make(chan received, ownerResults), ended: map[string]Lease{}}
}

// Offer replaces table's unleased offers with a pass's bins (Book.Offer, after expiring the
// leases past their deadline) and returns the bins not offered, which the owner rewrites itself.
func (o *Owner) Offer(table string, jobs []Job) []Refusal {
	o.expire()
	return o.cfg.Book.Offer(table, jobs, o.cfg.Now())
}

// InFlight is the inputs of table's live leases, which the table's next pass plans without.
func (o *Owner) InFlight(table string) map[string]bool {
	o.expire()
	return o.cfg.Book.InFlight(table)
}

// Drop ends table's leases and offers: this process lost the table. Late results of the leases
// are refused and their outputs removed.
func (o *Owner) Drop(table string) { o.remember(o.cfg.Book.Drop(table), EndDropped) }

// Run answers workers until ctx is done; a commit in flight finishes first, and the answers
// queued leave before it returns.
func (o *Owner) Run(ctx context.Context) error {
	stop, sent := make(chan struct{}), make(chan struct{})
	go func() { defer close(sent); o.out.Run(stop) }()
	o.tr.Handle(KindWorker, o.receive)
	tick := time.NewTicker(o.cfg.Tick)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			o.expire()
		case r := <-o.results:
			o.result(ctx, r)
		}
	}
	o.tr.Handle(KindWorker, func(string, []byte) {}) // later messages: dropped, their leases lapse
	close(stop)
	<-sent
	return nil
}

// expire ends the leases past their deadline and remembers them for their holders' late results.
func (o *Owner) expire() { o.remember(o.cfg.Book.Expire(o.cfg.Now()), EndLapsed) }

// remember keeps the leases that ended without a result as outcome, and tells Ended.
func (o *Owner) remember(ls []Lease, outcome string) {
	for _, l := range ls {
		o.cfg.Ended(l, outcome)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range ls {
		o.ended[l.ID] = l
		o.order = append(o.order, l.ID)
	}
	for len(o.order) > endedLeases {
		delete(o.ended, o.order[0])
		o.order = o.order[1:]
	}
}

// endedOf returns the ended lease id if from held it.
func (o *Owner) endedOf(id, from string) (Lease, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l, ok := o.ended[id]
	return l, ok && l.Worker == from
}

// receive is the transport's handler: it must not block.
func (o *Owner) receive(from string, msg []byte) {
	if !o.cfg.Authenticated() {
		return
	}
	m, err := DecodeWorker(msg, from)
	if err != nil {
		return // not answered: a forged or broken message costs its sender its lease
	}
	now := o.cfg.Now()
	if m.Catalog != o.cfg.Catalog {
		if m.Type == TypeWant {
			o.send(from, OwnerMessage{V: Version, Type: TypeLeases, Catalog: o.cfg.Catalog, RetryMs: o.cfg.Retry.Milliseconds()})
		} else {
			o.cfg.Refused(m, RefusedCatalog)
			o.answer(from, m.Lease, OutcomeExpired, errors.New("the lease is of another catalog"))
		}
		return
	}
	switch m.Type {
	case TypeWant:
		o.want(from, m, now)
	case TypeRenew:
		if _, err := o.cfg.Book.Renew(m.Lease, from, now); err != nil {
			o.cfg.Refused(m, refusedReason(err))
			o.answer(from, m.Lease, OutcomeExpired, err)
		}
	case TypeResult:
		l, err := o.cfg.Book.Complete(m.Lease, from, now)
		select {
		case o.results <- received{m: m, at: now, lease: l, err: err}:
		default:
			if err == nil { // not taken up: the bin is planned again, the worker hears nothing (lost)
				o.cfg.Book.Settle(l)
				o.remember([]Lease{l}, EndLapsed)
			}
			o.cfg.Dropped()
		}
	}
}

func (o *Owner) want(from string, m WorkerMessage, now time.Time) {
	o.expire()
	want := WantOf(m)
	if o.cfg.Workers != nil {
		want.MaxBins = max(o.cfg.Book.Share(o.cfg.Workers()), 1)
	}
	leases, _ := o.cfg.Book.Take(from, want, from == o.tr.Name(), now) // an id source failure leases what it made
	reply := OwnerMessage{V: Version, Type: TypeLeases, Catalog: o.cfg.Catalog}
	for _, l := range leases {
		reply.Leases = append(reply.Leases, l.Grant())
	}
	if len(reply.Leases) == 0 {
		reply.RetryMs = o.cfg.Retry.Milliseconds()
	}
	o.send(from, reply)
}

// result ends the sender's live lease and commits its merged files; a result of a lease that is
// not live or not the sender's is answered expired, and its outputs are removed when the sender
// held the lease (its merge ran on a lapsed lease: nobody else will commit them).
func (o *Owner) result(ctx context.Context, r received) {
	m, l, err := r.m, r.lease, r.err
	if err != nil {
		// Removed before the answer: an answer expired says the owner removed what it could.
		if ended, held := o.endedOf(m.Lease, m.From); held && m.Status == StatusMerged {
			o.cfg.Remove(ctx, ended, m.Files)
		}
		o.cfg.Refused(m, refusedReason(err))
		o.answer(m.From, m.Lease, OutcomeExpired, err)
		return
	}
	defer o.cfg.Book.Settle(l) // its inputs are plannable again once the commit ended
	if m.Status == StatusFailed {
		o.finish(l, OutcomeFailed, errors.New(m.Error)) // the worker removed its outputs
		return
	}
	if err := o.cfg.Check(ctx, l, m.Files); err != nil {
		o.finish(l, OutcomeFailed, err) // not the job's files: none removed
		return
	}
	res := o.cfg.Commit(ctx, l, m)
	if (res.Outcome == OutcomeConflict || res.Outcome == OutcomeFailed) && !res.Removed {
		o.cfg.Remove(ctx, l, m.Files)
	}
	o.finish(l, res.Outcome, res.Err)
}

// finish tells Ended how l's result ended and answers its holder.
func (o *Owner) finish(l Lease, outcome string, err error) {
	o.cfg.Ended(l, outcome)
	o.answer(l.Worker, l.ID, outcome, err)
}

func (o *Owner) answer(to, lease, outcome string, err error) {
	a := OwnerMessage{V: Version, Type: TypeAnswer, Lease: lease, Outcome: outcome}
	if err != nil && outcome != OutcomeCommitted {
		a.Error = err.Error()
		if len(a.Error) > maxErrorBytes {
			a.Error = a.Error[:maxErrorBytes]
		}
	}
	o.send(to, a)
}

func (o *Owner) send(to string, m OwnerMessage) {
	msg, err := m.Encode()
	if err != nil {
		o.cfg.Dropped()
		return
	}
	o.out.Post(to, msg)
}
