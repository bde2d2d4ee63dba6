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
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/lake"
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
	Now      func() time.Time
	Log      *zap.Logger
	Metrics  *Metrics
	OnReport func(Report) // called after every tick with what the claims look like now

	mu        sync.Mutex
	held      map[string]heldClaim
	busy      map[string]int  // batches in flight per stream
	releasing map[string]bool // about to be released: no new batch may start
	report    Report
	commits   int
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

// Metrics are the claim metrics (rows in docs/metrics.md).
type Metrics struct {
	Held       prometheus.Gauge
	Commits    *prometheus.CounterVec // outcome
	Others     prometheus.Gauge
	Takeovers  prometheus.Counter
	FencedSkip prometheus.Counter
}

// NewMetrics registers the claim metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_claim_streams_held", Help: "Streams of the WAL root whose catalog claim this process holds."}),
		Commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_claim_commits_total", Help: "Claim commits (take, renew, release) by outcome: committed, conflict (another claimer committed first; re-read and retried), failed."}, []string{"outcome"}),
		Others: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_claim_streams_skipped", Help: "Streams of the WAL root this process skips because another live process claims them."}),
		Takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_claim_takeovers_total", Help: "Claims taken over from another holder after their expiry."}),
		FencedSkip: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_claim_fenced_batches_total", Help: "Drain batches not committed because the stream's claim was lost, expiring or being released."}),
	}
	reg.MustRegister(m.Held, m.Commits, m.Others, m.Takeovers, m.FencedSkip)
	for _, o := range []string{"committed", "conflict", "failed"} {
		m.Commits.WithLabelValues(o) // at 0, so the first failed claim commit shows in increase()
	}
	return m
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
func (m *Manager) Fenced() { m.Metrics.FencedSkip.Inc() }

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
			m.Log.Warn("claim tick failed; claims not renewed expire and fence this process", zap.Error(err))
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
			m.Metrics.Commits.WithLabelValues("failed").Inc()
			return err
		}
		st, err := Parse(t.Properties())
		if err != nil {
			return err
		}
		// Validity counts from before the commit is sent: whenever it lands, the claim it writes
		// runs TTL from a moment no earlier than this one.
		start := m.Now()
		m.mu.Lock()
		m.init()
		m.dropLost(st)
		p := Decide(st, m.Holder, streams, boolSet(m.busy), start, m.TTL)
		for _, s := range p.Release {
			m.releasing[s] = true
		}
		m.mu.Unlock()

		if m.beforeCommit != nil {
			m.beforeCommit()
		}
		nt, err := lake.CommitPropertiesCAS(ctx, t, p.Set, p.Remove, iceberg.Properties{
			"siglake.claimer": m.Holder, "siglake.claims.held": strconv.Itoa(len(p.Hold)),
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
				m.Metrics.Commits.WithLabelValues("conflict").Inc()
				select { // a little jitter so the losers do not collide again
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(rand.Int64N(int64(50 * time.Millisecond)))):
				}
				continue
			}
			m.Metrics.Commits.WithLabelValues("failed").Inc()
			return fmt.Errorf("claim commit: %w", err)
		}
		m.Metrics.Commits.WithLabelValues("committed").Inc()
		m.apply(st, p, start)
		m.commits++
		if m.commits%20 == 0 {
			if err := lake.TrimSnapshots(ctx, nt, 10); err != nil {
				m.Log.Debug("trim claims table snapshots", zap.Error(err))
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
			m.Log.Warn("claim lost: another process holds the stream now; not committing it",
				zap.String("stream", s), zap.String("holder", c.Holder), zap.Uint64("epoch", c.Epoch))
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
		m.Log.Info("claim released", zap.String("stream", s), zap.Int("fair_share", p.Share), zap.Int("live_claimers", p.Live))
	}
	for _, s := range p.Hold {
		prev, had := st.Claims[s]
		c, _ := Parse(map[string]string{StreamKeyPrefix + s: p.Set[StreamKeyPrefix+s]})
		m.held[s] = heldClaim{epoch: c.Claims[s].Epoch, validUntil: until}
		if had && prev.Holder != m.Holder {
			m.Metrics.Takeovers.Inc()
			m.Log.Info("claim taken over after its expiry", zap.String("stream", s), zap.String("previous_holder", prev.Holder),
				zap.Time("previous_expiry", prev.Expires), zap.Uint64("epoch", c.Claims[s].Epoch))
		} else if !had {
			m.Log.Info("claim taken", zap.String("stream", s), zap.Uint64("epoch", c.Claims[s].Epoch))
		}
	}
	m.report.Others = p.Others
	m.report.Live, m.report.Share = p.Live, p.Share
	m.Metrics.Held.Set(float64(len(m.held)))
	m.Metrics.Others.Set(float64(len(p.Others)))
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
		m.Metrics.Held.Set(0)
		m.mu.Unlock()
	}()
	for attempt := 1; ; attempt++ {
		t, ok, err := m.Lake.LoadClaimsTable(ctx)
		if err != nil || !ok {
			return err
		}
		st, err := Parse(t.Properties())
		if err != nil {
			return err
		}
		remove := ReleaseAll(st, m.Holder)
		if len(remove) == 0 {
			return nil
		}
		_, err = lake.CommitPropertiesCAS(ctx, t, nil, remove, iceberg.Properties{"siglake.claimer": m.Holder, "siglake.claims.held": "0"})
		if errors.Is(err, lake.ErrCASConflict) && attempt < conflictRetries {
			m.Metrics.Commits.WithLabelValues("conflict").Inc()
			continue
		}
		if err != nil {
			m.Metrics.Commits.WithLabelValues("failed").Inc()
			return fmt.Errorf("release claims: %w", err)
		}
		m.Metrics.Commits.WithLabelValues("committed").Inc()
		m.Log.Info("claims released", zap.Int("properties", len(remove)))
		return nil
	}
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
