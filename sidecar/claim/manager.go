package claim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// Manager takes, renews and releases one process's claims in the catalog and answers the drain's
// question "may I commit this stream now?".
type Manager struct {
	Lake   *lake.Lake
	Holder string        // the pod / member name written into every claim
	TTL    time.Duration // a claim not renewed for this long may be taken over
	// Streams lists the streams present (the subdirectories of the WAL root).
	Streams func() ([]string, error)
	// Now is time.Now in production: its monotonic reading makes the fence immune to steps of the
	// wall clock; only the expiry written into the catalog uses the wall clock.
	Now func() time.Time
	// Observer hears what the manager does (sidecar/instrument counts and logs it); nil: nothing.
	Observer Observer
	OnReport func(Report) // called after every tick with what the claims look like now
	// Addr, when set, makes this a committer claim manager (group commit without gossip):
	// Streams lists the tables, the claims are committer claims carrying Addr, the address
	// this process receives group commit requests on. Owns and Committer answer for tables.
	Addr string
	// ReadOnly committer managers only read the committer claims, for Committer: a process that
	// does not maintain tables takes none, yet its pods hand off to the tables' holders.
	ReadOnly bool

	mu        sync.Mutex
	held      map[string]heldClaim
	busy      map[string]int  // batches in flight per stream
	releasing map[string]bool // about to be released: no new batch may start
	report    Report
	commits   int
	view      State // the claims as last read: Committer answers from it
	// beforeCommit, when set (tests), runs between reading the claims and committing.
	beforeCommit func()
}

type heldClaim struct {
	epoch uint64
	// validUntil is when this process stops starting commits of the stream: the start of the
	// last successful claim commit plus Fence(TTL), on the monotonic clock.
	validUntil time.Time
}

// Report is the claims part of /debug/status.
type Report struct {
	Holder     string            `json:"holder"`
	TTLSeconds float64           `json:"ttl_seconds"`
	Held       []HeldReport      `json:"held"`
	Others     map[string]string `json:"others,omitempty"` // stream -> holder
	Live       int               `json:"live_claimers"`
	Share      int               `json:"fair_share"`
	LastTick   time.Time         `json:"last_tick"`
	LastError  string            `json:"last_error,omitempty"`
}

// HeldReport is one claim this process holds.
type HeldReport struct {
	Stream     string    `json:"stream"`
	Epoch      uint64    `json:"epoch"`
	ValidUntil time.Time `json:"valid_until"`
}

// CommitOutcome is how one claim commit (take, renew, release) ended.
type CommitOutcome string

const (
	Committed CommitOutcome = "committed"
	// Conflict: another claimer committed first; the manager re-reads and retries.
	Conflict CommitOutcome = "conflict"
	Failed   CommitOutcome = "failed"
)

// CommitOutcomes lists every CommitOutcome (metric label values, exported at 0).
var CommitOutcomes = []CommitOutcome{Committed, Conflict, Failed}

// Observer hears what a Manager does, as it happens: claim imports no metrics or logging
// library, and the process records these through sidecar/instrument.
type Observer interface {
	// Committed: a claim commit ended with o.
	Committed(o CommitOutcome)
	// Held: this process holds n claims now (after each applied tick, 0 after Release).
	Held(n int)
	// Skipped: n streams are skipped because another live process claims them.
	Skipped(n int)
	// Taken: a free stream was claimed.
	Taken(stream string, epoch uint64)
	// TakenOver: a stream whose claim by previousHolder expired was claimed.
	TakenOver(stream, previousHolder string, previousExpiry time.Time, epoch uint64)
	// Released: a stream was given up to even out the shares.
	Released(stream string, share, live int)
	// ReleasedAll: Release removed this process's properties claims.
	ReleasedAll(properties int)
	// Lost: the table shows stream in holder's name: this process stops committing it.
	Lost(stream, holder string, epoch uint64)
	// Fenced: a drain batch was not started or committed because its claim was not valid.
	Fenced()
	// TickFailed: a tick failed; claims not renewed expire and fence this process.
	TickFailed(err error)
	// TrimFailed: trimming the claims table's snapshots failed (harmless; tried again later).
	TrimFailed(err error)
}

type nopObserver struct{}

func (nopObserver) Committed(CommitOutcome)                     {}
func (nopObserver) Held(int)                                    {}
func (nopObserver) Skipped(int)                                 {}
func (nopObserver) Taken(string, uint64)                        {}
func (nopObserver) TakenOver(string, string, time.Time, uint64) {}
func (nopObserver) Released(string, int, int)                   {}
func (nopObserver) ReleasedAll(int)                             {}
func (nopObserver) Lost(string, string, uint64)                 {}
func (nopObserver) Fenced()                                     {}
func (nopObserver) TickFailed(error)                            {}
func (nopObserver) TrimFailed(error)                            {}

func (m *Manager) obs() Observer {
	if m.Observer == nil {
		return nopObserver{}
	}
	return m.Observer
}

func (m *Manager) init() {
	if m.held == nil {
		m.held, m.busy, m.releasing = map[string]heldClaim{}, map[string]int{}, map[string]bool{}
	}
}

// Begin asks to start a batch of stream: ok only while the claim is held, inside its fence and
// not being released. Every ok Begin must be followed by End; while the batch is in flight the
// stream is not released.
func (m *Manager) Begin(stream string) (epoch uint64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	h, held := m.held[stream]
	if !held || m.releasing[stream] || !m.Now().Before(h.validUntil) {
		return 0, false
	}
	m.busy[stream]++
	return h.epoch, true
}

// End closes a batch Begin allowed.
func (m *Manager) End(stream string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busy[stream]--; m.busy[stream] <= 0 {
		delete(m.busy, stream)
	}
}

// Valid is the fence: the drain calls it right before each commit. A claim that was not renewed
// in time is no longer valid although nobody may have taken it yet.
func (m *Manager) Valid(stream string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.held[stream]
	return ok && m.Now().Before(h.validUntil)
}

// Fenced counts a batch the drain did not start or commit because its claim was not valid.
func (m *Manager) Fenced() { m.obs().Fenced() }

// Held lists the streams this process may drain now, sorted.
func (m *Manager) Held() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.Now()
	var out []string
	for s, h := range m.held {
		if now.Before(h.validUntil) && !m.releasing[s] {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// Run ticks every RenewEvery(TTL) until ctx ends. It does not release: the caller calls Release
// once the drain stopped committing.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(RenewEvery(m.TTL))
	defer t.Stop()
	for {
		if err := m.Tick(ctx); err != nil && ctx.Err() == nil {
			m.obs().TickFailed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// conflictRetries bounds the re-reads of one tick after losing a CAS to another claimer.
const conflictRetries = 5

// Tick reads the claims, decides and commits once (re-reading after a lost CAS).
func (m *Manager) Tick(ctx context.Context) error {
	err := m.tick(ctx)
	m.mu.Lock()
	m.report.LastTick = m.Now()
	m.report.LastError = ""
	if err != nil {
		m.report.LastError = err.Error()
	}
	rep := m.reportLocked()
	m.mu.Unlock()
	if m.OnReport != nil {
		m.OnReport(rep)
	}
	return err
}

func (m *Manager) tick(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		streams, err := m.Streams()
		if err != nil {
			return fmt.Errorf("list streams: %w", err)
		}
		t, err := m.Lake.EnsureClaimsTable(ctx)
		if err != nil {
			m.obs().Committed(Failed)
			return err
		}
		st, err := m.kind().parse(t.Properties())
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.view = st
		m.mu.Unlock()
		if m.ReadOnly {
			return nil
		}
		// Validity counts from before the commit is sent: whenever it lands, the claim it writes
		// runs TTL from a moment no earlier than this one.
		start := m.Now()
		m.mu.Lock()
		m.init()
		m.dropLost(st)
		p := decide(kindOf{m.kind(), m.Addr}, st, m.Holder, streams, boolSet(m.busy), start, m.TTL)
		for _, s := range p.Release {
			m.releasing[s] = true
		}
		m.mu.Unlock()

		if m.beforeCommit != nil {
			m.beforeCommit()
		}
		nt, err := lake.CommitPropertiesCAS(ctx, t, p.Set, p.Remove, iceberg.Properties{
			tableprops.SumClaimer: m.Holder, tableprops.SumClaimsHeld: strconv.Itoa(len(p.Hold)),
		})
		if err != nil {
			m.mu.Lock()
			for _, s := range p.Release {
				delete(m.releasing, s)
				if !errors.Is(err, lake.ErrCASConflict) {
					delete(m.held, s) // the release may have landed: stop draining it
				}
			}
			m.mu.Unlock()
			if errors.Is(err, lake.ErrCASConflict) && attempt < conflictRetries {
				m.obs().Committed(Conflict)
				select { // a little jitter so the losers do not collide again
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(rand.Int64N(int64(50 * time.Millisecond)))):
				}
				continue
			}
			m.obs().Committed(Failed)
			return fmt.Errorf("claim commit: %w", err)
		}
		m.obs().Committed(Committed)
		m.apply(st, p, start)
		m.commits++
		if m.commits%20 == 0 {
			if err := lake.TrimSnapshots(ctx, nt, 10); err != nil {
				m.obs().TrimFailed(err)
			}
		}
		return nil
	}
}

// dropLost forgets claims the table shows in another holder's name: they were taken after this
// process let them expire.
func (m *Manager) dropLost(st State) {
	for s := range m.held {
		if c, ok := st.Claims[s]; !ok || c.Holder != m.Holder {
			m.obs().Lost(s, c.Holder, c.Epoch)
			delete(m.held, s)
		}
	}
}

func (m *Manager) apply(st State, p Plan, start time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	until := start.Add(Fence(m.TTL))
	for _, s := range p.Release {
		delete(m.held, s)
		delete(m.releasing, s)
		m.obs().Released(s, p.Share, p.Live)
	}
	for _, s := range p.Hold {
		prev, had := st.Claims[s]
		k := m.kind().claim.Name + s
		c, _ := m.kind().parse(map[string]string{k: p.Set[k]})
		m.held[s] = heldClaim{epoch: c.Claims[s].Epoch, validUntil: until}
		if had && prev.Holder != m.Holder {
			m.obs().TakenOver(s, prev.Holder, prev.Expires, c.Claims[s].Epoch)
		} else if !had {
			m.obs().Taken(s, c.Claims[s].Epoch)
		}
	}
	m.report.Others = p.Others
	m.report.Live, m.report.Share = p.Live, p.Share
	m.obs().Held(len(m.held))
	m.obs().Skipped(len(p.Others))
}

// Release gives up every claim of this process (SIGTERM, end of --once). Call it only after the
// drain stopped committing.
func (m *Manager) Release(ctx context.Context) error {
	m.mu.Lock()
	m.init()
	for s := range m.held {
		m.releasing[s] = true
	}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.held, m.releasing = map[string]heldClaim{}, map[string]bool{}
		m.obs().Held(0)
		m.mu.Unlock()
	}()
	for attempt := 1; ; attempt++ {
		t, ok, err := m.Lake.LoadClaimsTable(ctx)
		if err != nil || !ok {
			return err
		}
		st, err := m.kind().parse(t.Properties())
		if err != nil {
			return err
		}
		remove := m.kind().releaseAll(st, m.Holder)
		if len(remove) == 0 {
			return nil
		}
		_, err = lake.CommitPropertiesCAS(ctx, t, nil, remove, iceberg.Properties{tableprops.SumClaimer: m.Holder, tableprops.SumClaimsHeld: "0"})
		if errors.Is(err, lake.ErrCASConflict) && attempt < conflictRetries {
			m.obs().Committed(Conflict)
			continue
		}
		if err != nil {
			m.obs().Committed(Failed)
			return fmt.Errorf("release claims: %w", err)
		}
		m.obs().Committed(Committed)
		m.obs().ReleasedAll(len(remove))
		return nil
	}
}

// kind is the family of claims this manager keeps.
func (m *Manager) kind() kind {
	if m.Addr != "" || m.ReadOnly {
		return committerKind
	}
	return streamKind
}

// Owns is the committer claims' fence: this process holds table's claim, inside its fence, and
// is not releasing it. It commits the table's group commits and maintains it only then.
func (m *Manager) Owns(table string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.held[table]
	return ok && !m.releasing[table] && m.Now().Before(h.validUntil)
}

// Committer is where table's group commit requests go: this process's Addr while it Owns the
// table, else the address of the holder of a live committer claim as last read. ok false: none
// (no claim, an expired one, or this process's own claim past its fence), so pods commit
// directly.
func (m *Manager) Committer(table string) (addr string, ok bool) {
	if m.Owns(table) {
		return m.Addr, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.view.Claims[table]
	if !ok || c.Holder == m.Holder || c.Addr == "" || !m.Now().Before(c.Expires) {
		return "", false
	}
	return c.Addr, true
}

// Report returns the claims part of the status.
func (m *Manager) Report() Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reportLocked()
}

func (m *Manager) reportLocked() Report {
	r := m.report
	r.Holder, r.TTLSeconds = m.Holder, m.TTL.Seconds()
	r.Held = nil
	for s, h := range m.held {
		r.Held = append(r.Held, HeldReport{Stream: s, Epoch: h.epoch, ValidUntil: h.validUntil.Round(0)})
	}
	sort.Slice(r.Held, func(i, j int) bool { return r.Held[i].Stream < r.Held[j].Stream })
	others := map[string]string{}
	for k, v := range r.Others {
		others[k] = v
	}
	r.Others = others
	return r
}

func boolSet(m map[string]int) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, n := range m {
		if n > 0 {
			out[k] = true
		}
	}
	return out
}
