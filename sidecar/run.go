package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/buffer"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/membership"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/retention/pending"
)

// NewLogger builds the process logger: JSON in a container, console on a terminal (format "auto").
func NewLogger(format, level string) (*zap.Logger, error) {
	if format == "auto" {
		format = "json"
		if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			format = "console"
		}
	}
	var cfg zap.Config
	if format == "console" {
		cfg = zap.NewDevelopmentConfig()
		cfg.Development = false
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
		if colour() {
			cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
	} else {
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.TimeKey = "ts"
		cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
		cfg.Sampling = nil // every line about a commit or a quarantine matters
	}
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.OutputPaths, cfg.ErrorOutputPaths = []string{"stderr"}, []string{"stderr"}
	// Stack traces only for panics: zap's presets add one to every Error (production) or Warn
	// (development) line, where the message already says what failed and a trace buries it.
	cfg.DisableStacktrace = true
	return cfg.Build(zap.AddStacktrace(zapcore.DPanicLevel))
}

// colour says whether console logs colour their levels: only on a terminal, and not with
// NO_COLOR set (no-color.org), so a redirected or piped log has no escape codes.
func colour() bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	fi, err := os.Stderr.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Process is a running `siglake compactor`.
type Process struct {
	Cfg     config.Config
	Log     *zap.Logger
	Metrics *Metrics
	Status  *Status
	Ready   Readiness
	Version string
	Now     func() time.Time

	// Addr is the HTTP listen address once Run started serving (useful with port 0).
	Addr chan string
	// BufferAddr is the WAL buffer's listen address once it serves (--buffer-addr set).
	BufferAddr chan string
	// HTTPTimeouts bound the metrics and status listener (DefaultHTTPTimeouts); BufferTimeouts the
	// WAL buffer's (zero fields: buffer.DefaultTimeouts). Tests shorten them.
	HTTPTimeouts   HTTPTimeouts
	BufferTimeouts buffer.Timeouts
	// ProvisionGrace is how long the long-running process waits out a catalog that refuses its
	// role, database or grants (lake.ErrNotProvisioned) before it exits (DefaultProvisionGrace).
	ProvisionGrace time.Duration

	cluster *gossip.Cluster
	buffer  *buffer.Service
	// memory is the process memory budget the loops take their shares of; set by Run.
	memory *membudget.Budget
	// writeErrs are the tables whose last commit failed (siglake_catalog_writable, /readyz).
	writeErrs writeErrors
}

// NewProcess prepares a process from cfg.
func NewProcess(cfg config.Config, log *zap.Logger, version string) *Process {
	p := &Process{Cfg: cfg, Log: log, Metrics: NewMetrics(), Version: version, Now: time.Now,
		Status: NewStatus(cfg.NodeName, cfg.Role, version, time.Now()), Addr: make(chan string, 1), BufferAddr: make(chan string, 1),
		HTTPTimeouts: DefaultHTTPTimeouts, ProvisionGrace: DefaultProvisionGrace}
	p.Metrics.SetBuildInfo(version, "")
	return p
}

// CheckWALDir fails with the option's names when the WAL dir is missing or unreadable.
func CheckWALDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("WAL dir %q (--wal-dir / SIGLAKE_WAL_DIR): %w; accepted: an existing, readable directory shared with the ingest container", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("WAL dir %q (--wal-dir / SIGLAKE_WAL_DIR) is not a directory", dir)
	}
	if _, err := os.ReadDir(dir); err != nil {
		return fmt.Errorf("WAL dir %q (--wal-dir / SIGLAKE_WAL_DIR) is not readable: %w", dir, err)
	}
	return nil
}

// Run serves HTTP and runs the loops of the configured role until ctx is cancelled (SIGTERM).
// On cancellation it takes no new batch, lets the in-flight commit finish for up to
// ShutdownTimeout (abandoning it after that leaves its segments in the WAL, so nothing is lost),
// and returns nil. once drains everything sealed, then returns.
func (p *Process) Run(ctx context.Context, once bool) error {
	setDefaultGoMemLimit(p.Log)
	p.memory = p.newMemoryBudget()
	setDefaultGCPercent(p.Log, gcTuning(p.Cfg.Role.Drains(), p.Cfg.CommitBatchTargetBytes, p.memory.Limit()))
	p.publishMemory()
	if p.Cfg.Role.Drains() {
		if err := CheckWALDir(p.Cfg.WALDir); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", p.Cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on --http-addr / SIGLAKE_HTTP_ADDR %q: %w", p.Cfg.HTTPAddr, err)
	}
	p.Addr <- ln.Addr().String()
	srv := p.HTTPTimeouts.Server(Handler(p.Metrics, p.Status, &p.Ready, p.Now))
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.Log.Error("http server stopped", zap.Error(err))
		}
	}()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	var lakeRef atomic.Pointer[lake.Lake] // the WAL buffer's catalog, once open
	if err := p.startBuffer(&lakeRef); err != nil {
		return err
	}
	defer p.stopBuffer()
	if err := p.startGossip(ln.Addr().String()); err != nil {
		return err
	}
	defer p.stopGossip()
	if p.cluster != nil {
		go membership.Watch(ctx, p.cluster, p.Cfg.Namespace, p.Status, p.Log)
		if p.Cfg.GossipKeyFile != "" {
			go membership.WatchKeys(ctx, p.cluster, p.Cfg.GossipKeyFile, membership.KeyReload, p.Log.Named("gossip"))
		}
	}
	p.Ready.Set(false, "connecting to the catalog")
	p.Log.Info("siglake compactor starting", zap.String("role", string(p.Cfg.Role)), zap.String("node", p.Cfg.NodeName),
		zap.String("wal_dir", p.Cfg.WALDir), zap.String("catalog", lake.Redact(p.Cfg.Catalog)), zap.String("warehouse", p.Cfg.Warehouse),
		zap.String("http_addr", ln.Addr().String()), zap.String("version", p.Version))

	// work outlives ctx by ShutdownTimeout so an in-flight commit can finish after SIGTERM.
	work, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	go func() {
		<-ctx.Done()
		t := time.NewTimer(p.Cfg.ShutdownTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			p.Log.Warn("shutdown timeout: abandoning the in-flight batch; its segments stay in the WAL")
			cancelWork()
		case <-work.Done():
		}
	}()

	l, err := p.openLake(ctx, once)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer l.Close()
	defer p.stopBuffer() // before the catalog closes under a read in flight
	lakeRef.Store(l)
	l.WatchCommits(p.observeCommit)
	p.setWritable("", nil) // open: writable until a commit says otherwise
	p.checkCatalog(ctx, l)
	go p.watchCatalog(ctx, l)
	returnStartupGarbage(p.Log) // started: what is allocated from here on is the loops' working set

	var wg sync.WaitGroup
	if p.Cfg.Role.Maintains() && !once {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.maintain(ctx, work, l)
		}()
	}
	if p.Cfg.Role.Drains() {
		err = p.drain(ctx, work, l, once)
	} else {
		<-ctx.Done()
	}
	wg.Wait()
	p.Log.Info("siglake compactor stopped")
	return err
}

// DefaultProvisionGrace: on Kubernetes a PostgreSQL operator (CloudNativePG, Zalando, Crunchy)
// accepts connections before it has created the role and the database; two minutes covers that
// without hiding a wrong --catalog for long.
const DefaultProvisionGrace = 2 * time.Minute

// openLake connects to the catalog, retrying with backoff while it is unreachable; meanwhile the
// drain cannot commit, so the backlog is kept and reported. A configuration error ends it, except
// that the long-running process (not once) waits up to ProvisionGrace for a catalog that refuses
// its role, database or grants, which may still be being created, rather than crash-looping.
func (p *Process) openLake(ctx context.Context, once bool) (*lake.Lake, error) {
	start := time.Now()
	for failures := 1; ; failures++ {
		l, err := lake.Open(ctx, config.LakeConfig(p.Cfg))
		if err == nil {
			p.setCatalog(nil)
			return l, nil
		}
		left := p.ProvisionGrace - time.Since(start)
		if errors.Is(err, lake.ErrBadConfig) && (once || !errors.Is(err, lake.ErrNotProvisioned) || left <= 0) {
			return nil, err
		}
		p.setCatalog(err)
		wait := catalogBackoff.Wait(failures, nil)
		if errors.Is(err, lake.ErrBadConfig) {
			wait = min(wait, left)
			p.Log.Error("the catalog refuses this process's role, database or grants; waiting in case they are still being "+
				"provisioned, then exiting: check --catalog / SIGLAKE_CATALOG and the database's users",
				zap.Error(err), zap.Duration("retry_in", wait), zap.Duration("exit_in", left.Round(time.Second)))
		} else {
			p.Log.Warn("catalog unreachable; retrying", zap.Error(err), zap.Duration("retry_in", wait))
		}
		observe := func() {
			if p.Cfg.Role.Drains() {
				if segs, serr := localwal.Scan(p.Cfg.WALDir); serr == nil {
					p.newDrain(nil).ObserveBacklog(segs, p.Now())
				}
			}
		}
		observe()
		// The backlog gauges keep the drain's scan cadence meanwhile.
		retry := time.After(wait)
	sleep:
		for {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-retry:
				break sleep
			case <-time.After(p.Cfg.DrainPollInterval):
				observe()
			}
		}
	}
}

// catalogBackoff paces openLake: 1 s, 2 s, ... 30 s between attempts to reach the catalog.
var catalogBackoff = lake.Backoff{Min: time.Second, Max: 30 * time.Second, Factor: 2, Jitter: lake.NoJitter}

func (p *Process) setCatalog(err error) {
	if err == nil {
		p.Ready.Set(true, "")
		p.Metrics.CatalogUp.Set(1)
		p.Status.Update(func(r *StatusReport) { r.CatalogReady, r.CatalogError = true, "" })
		return
	}
	p.Ready.Set(false, err.Error())
	p.Metrics.CatalogUp.Set(0)
	p.Status.Update(func(r *StatusReport) { r.CatalogReady, r.CatalogError = false, err.Error() })
}

// watchCatalog checks the catalog every 5 s so /readyz follows an outage even while nothing
// commits, and so the catalog identity this process gossips follows the one stored.
func (p *Process) watchCatalog(ctx context.Context, l *lake.Lake) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.checkCatalog(ctx, l)
		p.forgetWriteErrors()
	}
}

// checkCatalog pings the catalog for /readyz, then reads the catalog identity, publishes it in
// /debug/status and gossips it, so leases are shared only with members of the same catalog. An
// identity that cannot be read or created (a catalog that refuses this principal namespace
// creation, say) does not make the pod unready: the drain still commits. It is logged when it
// changes and shown in /debug/status, and the process owns no table until it knows its catalog.
func (p *Process) checkCatalog(ctx context.Context, l *lake.Lake) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := l.Ping(cctx)
	p.setCatalog(err)
	if err != nil {
		return
	}
	id, err := l.CatalogID(cctx)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	var prev string
	p.Status.Update(func(r *StatusReport) {
		prev = r.CatalogIDError
		r.CatalogIDError = msg
		if err == nil {
			r.CatalogID = id
		}
	})
	if err != nil {
		if msg != prev && p.cluster != nil { // without gossip the identity only shows in status
			p.Log.Error("catalog identity unknown: this process maintains no table until it is (the drain goes on)",
				zap.String("namespace", lake.IdentityNamespace(p.Cfg.Namespace)), zap.Error(err))
		}
		return
	}
	if p.cluster != nil && p.cluster.Catalog() != id {
		if err := p.cluster.SetCatalog(id, 5*time.Second); err != nil {
			p.Log.Warn("gossiping the catalog identity failed; peers learn it at the next state exchange", zap.String("catalog_id", id), zap.Error(err))
		}
	}
}

// owns says whether this process maintains table now; without gossip it owns every table. With
// gossip it owns nothing until it knows its catalog's identity: before that it cannot tell which
// members share its tables.
func (p *Process) owns(table string) bool {
	if p.cluster == nil {
		return true
	}
	return p.cluster.Catalog() != "" && p.cluster.Owns(lake.LeaseKey(p.Cfg.Namespace, table))
}

// claimManager builds the catalog claim manager over the WAL root's stream subdirectories.
func (p *Process) claimManager(l *lake.Lake) *claim.Manager {
	root := p.Cfg.WALDir
	warned := false
	return &claim.Manager{
		Lake: l, Holder: p.Cfg.NodeName, TTL: p.Cfg.CatalogClaimTTL, Now: time.Now,
		Observer: instrument.ClaimObserver{Metrics: p.Metrics.Claims, Log: p.Log},
		Streams: func() ([]string, error) {
			streams, loose, err := drain.StreamDirs(root)
			if loose > 0 && !warned {
				warned = true
				p.Log.Error("catalog claims are on but sealed segments lie directly in the WAL root; they are not drained until moved into a stream subdirectory (or claims are turned off)",
					zap.String("wal_dir", root), zap.Int("segments", loose))
			}
			return streams, err
		},
		OnReport: func(r claim.Report) { p.Status.Update(func(s *StatusReport) { s.Claims = &r }) },
	}
}

// backlog is the sealed WAL backlog that grades maintenance backpressure (0 for a process that
// does not drain: its maintenance competes with no drain).
func (p *Process) backlog() int {
	if !p.Cfg.Role.Drains() {
		return 0
	}
	return len(p.sealedSegments()) // what can be scanned: a bad dir is reported by the drain
}

func (p *Process) newDrain(l *lake.Lake) *drain.Drain {
	d := &drain.Drain{Cfg: DrainConfig(p.Cfg), Lake: l, Metrics: p.Metrics.Drain, Publish: p.Status, Log: p.Log, Now: p.Now,
		Mem: memory.DefaultAllocator, Retry: lake.DefaultRetry}
	if p.memory != nil {
		d.Reserve = p.memory.For(membudget.LoopDrain).Reserve
		d.MemoryLimit = p.memory.Limit()
	}
	return d
}

func (p *Process) drain(stop, work context.Context, l *lake.Lake, once bool) error {
	d := p.newDrain(l)
	d.Stop = stop
	d.Retire = p.buffer.Retire() // nil unless the WAL buffer retains drained segments
	if p.Cfg.CatalogClaim {
		m := p.claimManager(l)
		if err := m.Tick(stop); err != nil && stop.Err() == nil {
			p.Log.Warn("first claim tick failed; retrying every third of the TTL", zap.Error(err))
		}
		// Renewal follows work, not stop: after SIGTERM a batch in flight must keep its claim
		// valid until it commits; the deferred release ends the ticks once the loop returned.
		ticks, cancelTicks := context.WithCancel(work)
		done := make(chan struct{})
		go func() { defer close(done); m.Run(ticks) }()
		defer func() {
			// The drain loop returned, so no batch is in flight: stop renewing, then release so
			// the other processes take the streams now instead of after the TTL.
			cancelTicks()
			<-done
			rctx, cancel := context.WithTimeout(work, 10*time.Second)
			defer cancel()
			if err := m.Release(rctx); err != nil {
				p.Log.Warn("could not release claims; the others take the streams once they expire", zap.Error(err))
			}
		}()
		d.Claims = m
	}
	d.CheckUncleanStop(work) // a batch the previous run left in flight: say so before draining again
	return d.Run(stop, work, p.Cfg.DrainPollInterval, once, func(res drain.CycleResult, err error) {
		if err != nil {
			p.Log.Warn("drain cycle had errors", zap.Error(err))
			if errors.Is(err, drain.ErrWALDir) {
				p.Ready.Set(false, err.Error())
			}
		} else if res.Committed > 0 && !p.Ready.ready.Load() {
			// Only a commit proves the catalog is back: a cycle whose batches all wait out their
			// backoff returns no error either. An idle process recovers through watchCatalog.
			p.setCatalog(nil)
		}
	})
}

// maintain ticks the maintainer until stop is done; gauges and expiry keep running with rewrites off.
func (p *Process) maintain(stop, work context.Context, l *lake.Lake) {
	p.Metrics.Maintain.LastSuccess.WithLabelValues() // exported (at 0) even if maintenance cannot start
	pc, err := config.PlanConfig(p.Cfg)
	if err != nil {
		p.Log.Error("maintenance disabled: bad compaction settings", zap.Error(err))
		return
	}
	m := &maintain.Maintainer{Cfg: MaintainConfig(p.Cfg), Plan: pc, Lake: l, Metrics: p.Metrics.Maintain, Publish: p.Status, Log: p.Log, Now: p.Now,
		Owns: p.owns, Backlog: p.backlog, Stop: stop}
	if p.memory != nil {
		m.Reserve = p.memory.Reserve
	}
	tick := p.Cfg.ReclusterInterval
	if tick == 0 || tick > 10*time.Second {
		tick = 10 * time.Second // gauges and expiry keep running with rewrites off
	}
	m.Run(stop, work, tick)
}

// DeleteSweep is `siglake delete-sweep` (sweep.Sweeper.SweepTables) with this process's
// options: its rewrites get the same index rebuild as the maintenance loop's.
func DeleteSweep(ctx context.Context, l *lake.Lake, cfg config.Config, log *zap.Logger, tables []string, o sweep.Options) ([]sweep.Report, error) {
	return DeleteSweeper(l, cfg, log).SweepTablesWith(ctx, tables, o)
}

// DeleteSweeper is the sweeper of `siglake delete-sweep` and of delete-request's count of what a
// request matches: the process's options, metrics nobody scrapes.
func DeleteSweeper(l *lake.Lake, cfg config.Config, log *zap.Logger) *sweep.Sweeper {
	m := &maintain.Maintainer{Cfg: MaintainConfig(cfg), Lake: l, Metrics: NewMetrics().Maintain, Log: log, Now: time.Now}
	return m.Deletes()
}

// RetentionRunner is the retention of `siglake retention`: the process's options, the
// maintainer's executor, metrics nobody scrapes.
func RetentionRunner(l *lake.Lake, cfg config.Config, log *zap.Logger) *retention.Runner {
	m := &maintain.Maintainer{Cfg: MaintainConfig(cfg), Lake: l, Metrics: NewMetrics().Maintain, Log: log, Now: time.Now}
	return m.Retention()
}

// GCKeep is what `siglake gc` keeps beyond the table metadata: the registered Puffin index
// sidecars, and the objects retention removed and deletes itself after the delete delay.
func GCKeep(t *table.Table) ([]string, error) {
	idx, err := puffinidx.Referenced(t)
	if err != nil {
		return nil, err
	}
	removed, err := pending.Referenced(t)
	if err != nil {
		return nil, fmt.Errorf("pending retention deletions: %w", err)
	}
	return append(idx, removed...), nil
}
