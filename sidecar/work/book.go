package work

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/plan"
)

// Defaults of the book's options (docs/design/bin-leases.md section 5).
const (
	// DefaultMinDuration is --bin-lease-duration: a lease's shortest life between renewals. A
	// worker renews every third of it, so two lost renewals in a row still keep it.
	DefaultMinDuration = 2 * time.Minute
	// DefaultOwnerWait is --bin-lease-owner-wait: how long a bin waits for another worker before
	// the owner's own takes it, when workers have asked lately.
	DefaultOwnerWait = 10 * time.Second
	// MaxDuration caps a lease's life between renewals whatever the rate says: a worker that
	// vanished keeps its bin's files out of planning no longer than this.
	MaxDuration = time.Hour
	// durationFactor is how many times a bin's estimated rewrite time its lease lasts: slack for
	// a slower worker than the ones measured, and for renewals lost on the way.
	durationFactor = 4
)

// Headroom of a leases message around the jobs it carries: the message's own fields (a catalog
// identity of up to 128 bytes, JSON-escaped), and each grant's id, table and duration.
const (
	messageOverhead = 1 << 10
	grantOverhead   = 256
	// MaxJobBytes is the largest encoded job Offer accepts: one that fits a leases message alone.
	MaxJobBytes = MaxMessageBytes - messageOverhead - grantOverhead
)

// Errors of the book.
var (
	// ErrNotLive: the lease is unknown, past its deadline, or ended (completed, expired, dropped).
	ErrNotLive = errors.New("lease is not live")
	// ErrNotHolder: the lease is live and held by another worker.
	ErrNotHolder = errors.New("lease is held by another worker")
	// ErrLeased: a file of an offered bin is an input of a live lease.
	ErrLeased = errors.New("a file of the bin is in a live lease")
	// ErrTwice: a file of an offered bin is in an earlier bin of the same pass.
	ErrTwice = errors.New("a file of the bin is in an earlier bin of the pass")
)

// Config is what the book decides with.
type Config struct {
	// MinDuration is a lease's shortest life between renewals (--bin-lease-duration); 0 means
	// DefaultMinDuration.
	MinDuration time.Duration
	// OwnerWait is how long an offer waits before the owner's own worker may take it, unless no
	// other worker asked within it (--bin-lease-owner-wait); 0 means DefaultOwnerWait.
	OwnerWait time.Duration
	// MaxAge ends a lease this long after it was taken, however often renewed (0: no bound). A
	// worker's outputs are unreferenced until the owner commits them, and orphan gc may remove
	// them past its floor; the process sets orphans.HandoffMaxAge, the bound a group-commit
	// hand-off has, so a result's commit ends inside the floor (docs/design/bin-leases.md
	// section 4).
	MaxAge time.Duration
}

// IDSource draws the random bits of lease ids: *math/rand/v2.ChaCha8 seeded from crypto/rand in
// the process, a seeded generator in tests. The book calls it under its lock.
type IDSource interface{ Uint64() uint64 }

// Want is one worker's ask: its free merge budget, what one merge of its reserves, and the largest
// bin it takes (0: any); and the owner's cap on bins for one ask (MaxBins, 0: none; not on the
// wire: the owner sets it to the worker's share, Owner.want).
type Want struct {
	FreeBytes, MergeBytes, MaxBinBytes int64
	MaxBins                            int
}

// WantOf is the ask a want message carries.
func WantOf(m WorkerMessage) Want {
	return Want{FreeBytes: m.FreeBytes, MergeBytes: m.MergeBytes, MaxBinBytes: m.MaxBinBytes}
}

// Slots is the most bins one Take leases for w: whole merges its free budget holds, at most
// MaxBins.
func (w Want) Slots() int {
	if w.MergeBytes < 1 || w.FreeBytes < 1 {
		return 0
	}
	n := int(min(w.FreeBytes/w.MergeBytes, 1<<20))
	if w.MaxBins > 0 {
		n = min(n, w.MaxBins)
	}
	return n
}

// fits reports whether a bin of bytes input bytes is one w takes.
func (w Want) fits(bytes int64) bool { return w.MaxBinBytes == 0 || bytes <= w.MaxBinBytes }

// Lease is one bin leased to one worker. Its Job is shared with the book: read it, do not change it.
type Lease struct {
	ID       string // 128 random bits, hex
	Table    string
	Job      Job
	Worker   string // the holder's member name
	Local    bool   // the holder is the owner's own worker
	Taken    time.Time
	Deadline time.Time     // the lease ends here unless renewed before
	Duration time.Duration // each renewal extends the deadline to its time plus this
}

// Live reports whether the lease's deadline is after now.
func (l Lease) Live(now time.Time) bool { return now.Before(l.Deadline) }

// Grant is the lease as the leases message carries it.
func (l Lease) Grant() Grant {
	return Grant{ID: l.ID, Table: l.Table, Job: l.Job, DurationMs: max(l.Duration.Milliseconds(), 1)}
}

// Offer is one bin on offer, for status.
type Offer struct {
	Table   string
	Job     Job
	Offered time.Time // the first pass that offered these files, of the passes in a row that did
}

// Refusal is a bin Offer did not offer, and why: the owner rewrites it itself, or not at all this
// pass (ErrLeased, ErrTwice).
type Refusal struct {
	Job Job
	Err error
}

// Outstanding is a table's offered and leased work, for metrics and status.
type Outstanding struct {
	OfferedBins  int
	OfferedBytes int64
	LeasedBins   int
	LeasedBytes  int64
	// CommittingBins are results taken up whose commit has not ended (Complete, not yet Settle).
	CommittingBins int
}

type offer struct {
	Offer
	rank  int    // its place in the last pass that offered it: the planner's most urgent first
	key   string // the bin's identity: its input paths
	bytes int64
	size  int // the job's encoded bytes
}

type tableBook struct {
	offers   map[string]*offer // by key
	inFlight map[string]string // input path -> the live or committing lease holding it
	// committing are the leases completed (their result taken up) whose commit has not ended
	// (Settle): their inputs stay in flight, or the next pass could plan them again and lose
	// the race to the commit.
	committing map[string]bool
	leased     int
	bytes      int64 // leased bytes
}

// Book is one owner's lease book over the tables it owns: the bins on offer and the live leases.
// Every method takes the caller's time; none reads a clock or does I/O. It is safe for
// concurrent use: the transport takes and renews while the table loops offer and complete.
type Book struct {
	cfg Config

	mu         sync.Mutex
	ids        IDSource
	rate       plan.RewriteRate
	tables     map[string]*tableBook
	leases     map[string]*Lease // live and lapsed-but-not-expired, by id
	firstOffer time.Time         // the book's first Offer: the owner wait's start
	lastRemote time.Time         // the last Take of a worker other than the owner's
	// offeringSince is when the book last went from no bin on offer to some (zero while none),
	// and unasked how long bins were on offer before it since the last remote ask: workers ask
	// only owners advertising offers, so only time with offers out counts toward the owner wait.
	offeringSince time.Time
	unasked       time.Duration
}

// NewBook returns an empty book drawing lease ids from ids.
func NewBook(cfg Config, ids IDSource) *Book {
	if cfg.MinDuration <= 0 {
		cfg.MinDuration = DefaultMinDuration
	}
	if cfg.OwnerWait <= 0 {
		cfg.OwnerWait = DefaultOwnerWait
	}
	return &Book{cfg: cfg, ids: ids, tables: map[string]*tableBook{}, leases: map[string]*Lease{}}
}

// LeaseDuration is a lease's life between renewals for a bin whose rewrite is estimated to take
// estimate (0: no rate known): durationFactor times the estimate, at least minimum, and at most
// MaxDuration unless minimum is more.
func LeaseDuration(minimum, estimate time.Duration) time.Duration {
	est := min(max(estimate, 0), MaxDuration) // no overflow below
	return max(minimum, min(durationFactor*est, MaxDuration))
}

// SetRate sets the measured rewrite rate lease durations are estimated from (plan.RewriteRate,
// fed by every result's bytes and time).
func (b *Book) SetRate(r plan.RewriteRate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rate = r
}

// Offer replaces table's unleased offers with a new pass's bins at now; leased bins stay until
// they end. A bin is identified by its input files: one offered by the pass before keeps its offer
// time, so its wait for the owner's worker goes on. A bin is refused (and returned with why) when
// it is not a valid job, does not fit a message, or shares a file with a live lease or an earlier
// bin of jobs. Call Expire first: a lapsed lease's files are in flight until it is expired.
func (b *Book) Offer(table string, jobs []Job, now time.Time) []Refusal {
	b.mu.Lock()
	defer b.mu.Unlock()
	var refused []Refusal
	if !localwal.ValidTable(table) {
		err := fmt.Errorf("offer bins of table %s: want a table name matching %s", quote(table), localwal.TablePattern)
		for _, j := range jobs {
			refused = append(refused, Refusal{Job: j, Err: err})
		}
		return refused
	}
	if b.firstOffer.IsZero() {
		b.firstOffer = now
	}
	t := b.table(table)
	next := map[string]*offer{}
	pass := map[string]bool{}
	for _, j := range jobs {
		size, err := offerable(t, j, pass)
		if err != nil {
			refused = append(refused, Refusal{Job: j, Err: err})
			continue
		}
		// Its place among the bins offered: a refused bin before it (leased meanwhile) does not
		// put this table's next bin behind the other tables' bins of the same place.
		o := &offer{Offer: Offer{Table: table, Job: j, Offered: now}, rank: len(next), key: binKey(j), bytes: j.Bytes(), size: size}
		if old, ok := t.offers[o.key]; ok {
			o.Offered = old.Offered
		}
		next[o.key] = o
		for _, in := range j.Inputs {
			pass[in.Path] = true
		}
	}
	t.offers = next
	b.forgetIfIdle(table)
	b.noteOffering(now)
	return refused
}

// offerable returns j's encoded size, or why it may not be offered beside the live leases of t
// and the files of the pass's earlier bins.
func offerable(t *tableBook, j Job, pass map[string]bool) (int, error) {
	if err := j.Validate(); err != nil {
		return 0, err
	}
	enc, err := json.Marshal(j)
	if err != nil {
		return 0, fmt.Errorf("encode job: %w", err)
	}
	if len(enc) > MaxJobBytes {
		return 0, fmt.Errorf("job of %d inputs encodes to %d bytes, at most %d travel: %w", len(j.Inputs), len(enc), MaxJobBytes, ErrTooLarge)
	}
	for _, in := range j.Inputs {
		if id, ok := t.inFlight[in.Path]; ok {
			return 0, fmt.Errorf("file %s (lease %s): %w", in.Path, id, ErrLeased)
		}
		if pass[in.Path] {
			return 0, fmt.Errorf("file %s: %w", in.Path, ErrTwice)
		}
	}
	return len(enc), nil
}

// binKey identifies a bin by its input files, whatever their order.
func binKey(j Job) string {
	paths := make([]string, len(j.Inputs))
	for i, in := range j.Inputs {
		paths[i] = in.Path
	}
	slices.Sort(paths)
	return strings.Join(paths, "\x00")
}

// Take leases bins to worker for want at now, at most want.Slots() of them and no more than one
// leases message carries: among the bins it takes (want.MaxBinBytes), in the order of the pass
// that offered them (the planner's most urgent first; each table's first bins before any
// table's second), older offers first among equals. Largest first, as it once was, let big
// bins hold the workers while the ingest edge's small bins were withdrawn pass after pass
// (docs/benchmarks.md, the simulator). local is the owner's own worker, which is served last:
// it gets only bins offered at least the owner wait ago, or any bin when no other worker asked
// within the wait (nobodyAsked: time with bins on offer since the last ask), so free workers get
// first pick and an owner without workers rewrites as promptly as it did alone. An error means
// the id source failed; the leases made before it stand.
func (b *Book) Take(worker string, want Want, local bool, now time.Time) ([]Lease, error) {
	if worker == "" || len(worker) > maxNameBytes {
		return nil, fmt.Errorf("take bins: worker %s: want a member name of 1 to %d bytes", quote(worker), maxNameBytes)
	}
	if want.MergeBytes < 1 || want.FreeBytes < 0 || want.MaxBinBytes < 0 {
		return nil, fmt.Errorf("take bins for %s: free %d merge %d max bin %d bytes: want merge >= 1, free and max bin >= 0",
			worker, want.FreeBytes, want.MergeBytes, want.MaxBinBytes)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.noteOffering(now) // before the unlock
	if !local {
		b.lastRemote, b.unasked = now, 0
	}
	slots := want.Slots()
	if slots == 0 {
		return nil, nil
	}
	cands := b.candidates(want, local, now)
	var out []Lease
	size := messageOverhead
	for _, o := range cands {
		if len(out) == slots {
			break
		}
		if size+o.size+grantOverhead > MaxMessageBytes {
			continue // a smaller bin may still fit the message
		}
		id, err := b.newID()
		if err != nil {
			return out, fmt.Errorf("take bins for %s: %w", worker, err)
		}
		out = append(out, b.lease(o, id, worker, local, now))
		size += o.size + grantOverhead
	}
	return out, nil
}

// candidates are the offers worker may take at now, in the order Take serves them.
func (b *Book) candidates(want Want, local bool, now time.Time) []*offer {
	anyAge := local && b.nobodyAsked(now)
	var cands []*offer
	for _, t := range b.tables {
		for _, o := range t.offers {
			if !want.fits(o.bytes) {
				continue
			}
			if local && !anyAge && now.Sub(o.Offered) < b.cfg.OwnerWait {
				continue
			}
			cands = append(cands, o)
		}
	}
	slices.SortFunc(cands, func(x, y *offer) int {
		return cmp.Or(cmp.Compare(x.rank, y.rank), x.Offered.Compare(y.Offered), cmp.Compare(x.Table, y.Table), cmp.Compare(x.key, y.key))
	})
	return cands
}

// nobodyAsked reports whether no worker but the owner's asked within the owner wait before now:
// since the book's first offer while none ever did (an owner alone); else for an owner wait of
// time with bins on offer since the last ask, since workers ask only an owner advertising offers
// (gossip meta wo). Counted from the last ask alone, passes further apart than the wait (a slow
// store) would hand each pass's fresh bins to the owner's worker before the others saw them;
// counted from each pass's offer alone, an owner whose workers left or stay busy would wait a
// whole owner wait on every pass.
func (b *Book) nobodyAsked(now time.Time) bool {
	if b.lastRemote.IsZero() {
		return now.Sub(b.firstOffer) >= b.cfg.OwnerWait
	}
	return b.unasked+b.offeredSinceAsked(now) >= b.cfg.OwnerWait
}

// offeredSinceAsked is how long bins have been on offer without a break up to now, counted from
// the last remote ask at the earliest; b.mu is held.
func (b *Book) offeredSinceAsked(now time.Time) time.Duration {
	if b.offeringSince.IsZero() {
		return 0
	}
	since := b.offeringSince
	if b.lastRemote.After(since) {
		since = b.lastRemote
	}
	return max(now.Sub(since), 0)
}

// noteOffering keeps offeringSince (now when bins came on offer, zero when none is) and unasked;
// b.mu is held.
func (b *Book) noteOffering(now time.Time) {
	switch offering := b.offering(); {
	case !offering:
		b.unasked += b.offeredSinceAsked(now)
		b.offeringSince = time.Time{}
	case b.offeringSince.IsZero():
		b.offeringSince = now
	}
}

// newID draws a lease id no live lease has; b.mu is held.
func (b *Book) newID() (string, error) {
	for range 3 {
		id := fmt.Sprintf("%016x%016x", b.ids.Uint64(), b.ids.Uint64())
		if _, taken := b.leases[id]; !taken {
			return id, nil
		}
	}
	return "", errors.New("the lease id source repeats ids of live leases")
}

// lease moves o from its table's offers to a lease of worker; b.mu is held.
func (b *Book) lease(o *offer, id, worker string, local bool, now time.Time) Lease {
	d := LeaseDuration(b.cfg.MinDuration, b.rate.Estimate(o.bytes))
	l := &Lease{ID: id, Table: o.Table, Job: o.Job, Worker: worker, Local: local, Taken: now, Duration: d}
	l.Deadline = b.deadline(l, now)
	t := b.tables[o.Table]
	delete(t.offers, o.key)
	for _, in := range o.Job.Inputs {
		t.inFlight[in.Path] = id
	}
	t.leased++
	t.bytes += o.bytes
	b.leases[id] = l
	return *l
}

// Renew extends worker's live lease id to now plus its duration. ErrNotLive: unknown, past its
// deadline or ended; ErrNotHolder: another worker holds it.
func (b *Book) Renew(id, worker string, now time.Time) (Lease, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, err := b.held(id, worker, now)
	if err != nil {
		return Lease{}, fmt.Errorf("renew lease %s for %s: %w", id, worker, err)
	}
	l.Deadline = b.deadline(l, now)
	return *l, nil
}

// deadline is l's deadline when taken or renewed at now: now plus its duration, and never past
// its age bound (Config.MaxAge).
func (b *Book) deadline(l *Lease, now time.Time) time.Time {
	d := now.Add(l.Duration)
	if b.cfg.MaxAge > 0 {
		d = minTime(d, l.Taken.Add(b.cfg.MaxAge))
	}
	return d
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Complete ends worker's live lease id at now and returns it (now may be when the result was
// received, if the owner takes it up later): no renewal or second result is accepted. Its inputs
// stay in flight until Settle, which the owner calls once the result's commit ended, so a pass
// never plans files a commit is about to replace. ErrNotLive (unknown, past its deadline, or
// ended: a second Complete) or ErrNotHolder: refuse the result.
func (b *Book) Complete(id, worker string, now time.Time) (Lease, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, err := b.held(id, worker, now)
	if err != nil {
		return Lease{}, fmt.Errorf("complete lease %s for %s: %w", id, worker, err)
	}
	b.tables[l.Table].committing[id] = true
	b.end(l)
	return *l, nil
}

// Settle takes the inputs of completed lease l out of flight: its commit ended, committed or
// not. Settling a lease twice, or one never completed, does nothing.
func (b *Book) Settle(l Lease) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tables[l.Table]
	if t == nil || !t.committing[l.ID] {
		return
	}
	delete(t.committing, l.ID)
	for _, in := range l.Job.Inputs {
		if t.inFlight[in.Path] == l.ID {
			delete(t.inFlight, in.Path)
		}
	}
	b.forgetIfIdle(l.Table)
}

// held returns the live lease id if worker holds it; b.mu is held.
func (b *Book) held(id, worker string, now time.Time) (*Lease, error) {
	l, ok := b.leases[id]
	switch {
	case !ok || !l.Live(now):
		return nil, ErrNotLive
	case l.Worker != worker:
		return nil, fmt.Errorf("held by %s: %w", l.Worker, ErrNotHolder)
	}
	return l, nil
}

// Expire ends the leases whose deadline is not after now and returns them, earliest deadline
// first: their files are plannable again, and a result for them is refused.
func (b *Book) Expire(now time.Time) []Lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Lease
	for _, l := range b.leases {
		if !l.Live(now) {
			out = append(out, *l)
		}
	}
	for i := range out {
		b.end(b.leases[out[i].ID])
	}
	sortLeases(out)
	return out
}

// Drop ends every lease of table and withdraws its offers (the owner lost the table): results
// for its leases are refused from now on. It returns the leases it ended.
func (b *Book) Drop(table string) []Lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Lease
	for _, l := range b.leases {
		if l.Table == table {
			out = append(out, *l)
		}
	}
	for i := range out {
		b.end(b.leases[out[i].ID])
	}
	if t, ok := b.tables[table]; ok {
		clear(t.offers)
		b.forgetIfIdle(table)
	}
	b.noteOffering(time.Time{}) // no clock here: the offered time until now is not counted
	sortLeases(out)
	return out
}

// end removes l from the book, its files from flight unless it is committing; b.mu is held.
func (b *Book) end(l *Lease) {
	delete(b.leases, l.ID)
	t := b.tables[l.Table]
	for _, in := range l.Job.Inputs {
		if t.inFlight[in.Path] == l.ID && !t.committing[l.ID] {
			delete(t.inFlight, in.Path)
		}
	}
	t.leased--
	t.bytes -= l.Job.Bytes()
	b.forgetIfIdle(l.Table)
}

func (b *Book) table(name string) *tableBook {
	t, ok := b.tables[name]
	if !ok {
		t = &tableBook{offers: map[string]*offer{}, inFlight: map[string]string{}, committing: map[string]bool{}}
		b.tables[name] = t
	}
	return t
}

// forgetIfIdle drops a table with neither offers nor leases; b.mu is held.
func (b *Book) forgetIfIdle(name string) {
	if t := b.tables[name]; t != nil && len(t.offers) == 0 && t.leased == 0 && len(t.committing) == 0 {
		delete(b.tables, name)
	}
}

// InFlight returns the inputs of table's leases that have not ended, which the table's next pass
// plans without: the owner never offers two bins over one file.
func (b *Book) InFlight(table string) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]bool{}
	if t := b.tables[table]; t != nil {
		for p := range t.inFlight {
			out[p] = true
		}
	}
	return out
}

// Outstanding returns table's offered and leased bins and bytes.
func (b *Book) Outstanding(table string) Outstanding {
	b.mu.Lock()
	defer b.mu.Unlock()
	var o Outstanding
	if t := b.tables[table]; t != nil {
		o.OfferedBins, o.LeasedBins, o.LeasedBytes, o.CommittingBins = len(t.offers), t.leased, t.bytes, len(t.committing)
		for _, of := range t.offers {
			o.OfferedBytes += of.bytes
		}
	}
	return o
}

// Share is one worker's share of the bins on offer among workers (those taking leased bins, the
// owner's own included): their number over workers, rounded up; 0 when nothing is on offer.
func (b *Book) Share(workers int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, t := range b.tables {
		n += len(t.offers)
	}
	return (n + max(workers, 1) - 1) / max(workers, 1)
}

// Offering reports whether any table has a bin on offer: the owner advertises wk while it does.
func (b *Book) Offering() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.offering()
}

// offering is Offering with b.mu held.
func (b *Book) offering() bool {
	for _, t := range b.tables {
		if len(t.offers) > 0 {
			return true
		}
	}
	return false
}

// Tables returns the tables with offers or leases, sorted.
func (b *Book) Tables() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.tables))
	for name := range b.tables {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Offers returns table's bins on offer, oldest offer first.
func (b *Book) Offers(table string) []Offer {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Offer
	var keys []string
	if t := b.tables[table]; t != nil {
		for k := range t.offers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, t.offers[k].Offer)
		}
	}
	slices.SortStableFunc(out, func(x, y Offer) int { return x.Offered.Compare(y.Offered) })
	return out
}

// Leases returns table's leases that have not ended, earliest deadline first.
func (b *Book) Leases(table string) []Lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Lease
	for _, l := range b.leases {
		if l.Table == table {
			out = append(out, *l)
		}
	}
	sortLeases(out)
	return out
}

func sortLeases(ls []Lease) {
	slices.SortFunc(ls, func(x, y Lease) int { return cmp.Or(x.Deadline.Compare(y.Deadline), cmp.Compare(x.ID, y.ID)) })
}
