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

	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/sidecar/buffer"
	"github.com/siglake/siglake/sidecar/buffer/listen"
	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/gomem"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/redact"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/peerhttp"
)

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
	// WAL buffer's (zero fields: listen.DefaultTimeouts). Tests shorten them.
	HTTPTimeouts   HTTPTimeouts
	BufferTimeouts listen.Timeouts
	// ProvisionGrace is how long the long-running process waits out a catalog that refuses its
	// role, database or grants (catalogs.ErrNotProvisioned) before it exits (DefaultProvisionGrace).
	ProvisionGrace time.Duration

	cluster *gossip.Cluster
	buffer  *buffer.Service
	// memory is the process memory budget the loops take their shares of; set by Run.
	memory *membudget.Budget
	// writeErrs are the tables whose last commit failed (siglake_catalog_writable, /readyz).
	writeErrs writeErrors
	// fullLogged is when observeFull last logged (Unix ns).
	fullLogged atomic.Int64
	// groupClient hands this pod's batches to their committers, committer commits other pods'
	// batches for the tables this process owns; nil while group commit is off or not started.
	// publishGroupCommit reads them.
	groupClient *commit.Client
	committer   *commit.Committer
	// peer is group commit without gossip (committer claims, HTTP transport); nil when it does
	// not run. peerHandler serves the listener's peer path once it does; httpAddr is the
	// listener's address, catalogID the catalog identity as last read.
	peer        *peerGroup
	peerWhy     string // why group commit without gossip does not run ("" when it does, or is not asked for)
	peerHandler atomic.Pointer[peerhttp.Transport]
	httpAddr    string
	catalogID   atomic.Value // string
	// binWorker: this process advertises gossip meta "wk" (advertisesBinLeases) and runs bin
	// leases' owner and worker beside maintenance (leasework.go).
	binWorker bool
}

// NewProcess prepares a process from cfg.
func NewProcess(cfg config.Config, log *zap.Logger, version string) *Process {
	p := &Process{Cfg: cfg, Log: log, Metrics: NewMetrics(), Version: version, Now: time.Now,
		Status: NewStatus(cfg.NodeName, cfg.Role, version, time.Now()), Addr: make(chan string, 1), BufferAddr: make(chan string, 1),
		HTTPTimeouts: DefaultHTTPTimeouts, ProvisionGrace: DefaultProvisionGrace}
	p.Metrics.SetBuildInfo(version, "")
	return p
}

// checkWALDir fails with the option's names when the WAL dir is missing or unreadable.
func checkWALDir(dir string) error {
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
	p.setUpMemory()
	useCodecs(p.Cfg)
	if p.Cfg.Role.Drains() {
		if err := checkWALDir(p.Cfg.WALDir); err != nil {
			return err
		}
	}
	httpAddr, stopHTTP, err := p.serveHTTP()
	if err != nil {
		return err
	}
	defer stopHTTP()
	var lakeRef atomic.Pointer[lake.Lake] // the WAL buffer's catalog, once open
	if err := p.startBuffer(&lakeRef); err != nil {
		return err
	}
	defer p.stopBuffer()
	if err := p.startGossip(httpAddr); err != nil {
		return err
	}
	defer p.stopGossip()
	p.watchMembership(ctx)
	p.Ready.Set(false, "connecting to the catalog")
	p.Log.Info("siglake compactor starting", zap.String("role", string(p.Cfg.Role)), zap.String("node", p.Cfg.NodeName),
		zap.String("wal_dir", p.Cfg.WALDir), zap.String("catalog", redact.URI(p.Cfg.Catalog)), zap.String("warehouse", p.Cfg.Warehouse),
		zap.String("http_addr", httpAddr), zap.String("version", p.Version))
	work, cancelWork := p.workContext(ctx)
	defer cancelWork()

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
	p.followCatalog(ctx, l)
	gomem.ReturnStartupGarbage(p.Log) // started: what is allocated from here on is the loops' working set

	err = p.runLoops(ctx, work, l, once)
	p.Log.Info("siglake compactor stopped")
	return err
}

// setUpMemory sets the runtime's memory defaults and makes the process memory budget the loops
// take their shares of.
func (p *Process) setUpMemory() {
	gomem.SetDefaultGoMemLimit(p.Log)
	p.memory = p.newMemoryBudget()
	gomem.SetDefaultGCPercent(p.Log, gomem.GCTuning(p.Cfg.Role.Drains(), p.Cfg.CommitBatchTargetBytes, p.memory.Limit()))
	p.publishMemory()
}

// serveHTTP serves /metrics, /debug/status and the probes on --http-addr, and publishes the
// address it listens on (Addr); stop shuts the server down.
func (p *Process) serveHTTP() (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", p.Cfg.HTTPAddr)
	if err != nil {
		return "", nil, fmt.Errorf("listen on --http-addr / SIGLAKE_HTTP_ADDR %q: %w", p.Cfg.HTTPAddr, err)
	}
	addr = ln.Addr().String()
	p.httpAddr = addr
	p.Addr <- addr
	mux := http.NewServeMux()
	mux.HandleFunc(peerhttp.Path, p.servePeer)
	mux.Handle("/", Handler(p.Metrics, p.Status, &p.Ready, p.Now))
	srv := p.HTTPTimeouts.Server(mux)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.Log.Error("http server stopped", zap.Error(err))
		}
	}()
	return addr, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// workContext is the loops' work context: it outlives ctx by ShutdownTimeout so an in-flight
// commit can finish after SIGTERM.
func (p *Process) workContext(ctx context.Context) (context.Context, context.CancelFunc) {
	work, cancelWork := context.WithCancel(context.Background())
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
	return work, cancelWork
}

// runLoops runs maintenance (not once) and the drain as the role says until ctx is done, and
// waits for both.
func (p *Process) runLoops(ctx, work context.Context, l *lake.Lake, once bool) error {
	var wg sync.WaitGroup
	p.startGroupCommit(l, once)
	// The committer outlives the drain and maintenance loops: its own pod's last batch, and the
	// other pods', may be in its queue when SIGTERM comes; it stops once both loops returned.
	committing, stopCommitting := context.WithCancel(work)
	committerDone := make(chan struct{})
	go func() { defer close(committerDone); p.runCommitter(committing) }()
	releaseClaims := func() {}
	if p.peer != nil {
		releaseClaims = p.runPeerGroup(work)
	}
	defer func() { stopCommitting(); <-committerDone; releaseClaims() }()
	if p.Cfg.Role.Maintains() && !once {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.maintain(ctx, work, l)
		}()
	}
	var err error
	if p.Cfg.Role.Drains() {
		err = p.drain(ctx, work, l, once)
	} else {
		<-ctx.Done()
	}
	wg.Wait()
	return err
}
