package buffer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/buffer/listen"
	"github.com/siglake/siglake/sidecar/buffer/segments"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

// Options are the process options the buffer takes (SIGLAKE_BUFFER_*).
type Options struct {
	Addr             string
	WALDir           string
	Claims           bool
	RetainAfterDrain time.Duration
	MaxReaders       int
	// MemoryBytes is shared by the reads; 0 is a quarter of the merge budget.
	MemoryBytes      int64
	MaxResponseBytes int64
	// Reserve takes each read's share of the process memory budget (Server.Reserve); nil: none.
	Reserve func(ctx context.Context, bytes int64) (release func(), err error)
	// Timeouts bound the listener's connections; zero fields take listen.DefaultTimeouts'.
	Timeouts listen.Timeouts
	// PastRetention is the drain's retention hook (Server.PastRetention); nil: none.
	PastRetention func(t *table.Table, now time.Time) (*rowfilter.Filter, int64)
	// TokenFile holds the bearer tokens readers must send (listen.Auth.TokenFile); "" takes none.
	TokenFile string
	// InsecureNoAuth lets Addr beyond loopback serve without a token or client CA
	// (--buffer-insecure-no-auth); without it Start refuses such an Addr.
	InsecureNoAuth bool
	// TLS puts the listener on HTTPS, with mutual TLS when it has a client CA.
	TLS listen.TLSOptions

	// wrap, when set, wraps the listener (tests: connections with small socket buffers, so that
	// a slow reader's pace reaches the server's writes instead of filling kernel buffers).
	wrap func(net.Listener) net.Listener
}

// Service is the buffer in a running process: its listener, and the retention sweep.
type Service struct {
	Server    *Server
	Retention *segments.Retention // nil when nothing is retained
	ln        net.Listener
	srv       *http.Server
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

// Start listens on o.Addr and serves reads; load reads the table's marks (nil until the catalog
// is open: reads get 503 meanwhile). It also sweeps retention every quarter of its duration.
func Start(o Options, load func(ctx context.Context, name string) (*table.Table, error), m *Metrics, log *zap.Logger) (*Service, error) {
	ln, auth, err := openListener(o, m, log)
	if err != nil {
		return nil, err
	}
	to := o.Timeouts.OrDefault()
	s := &Service{ln: ln, Server: newServer(o, load, m, log, auth, to.Write)}
	if o.RetainAfterDrain > 0 {
		s.Retention = &segments.Retention{Keep: o.RetainAfterDrain, Now: time.Now}
	}
	// No WriteTimeout: it would bound a whole answer; the handler sets a deadline per write.
	s.srv = &http.Server{Handler: s.Server.Handler(), ReadHeaderTimeout: to.ReadHeader, ReadTimeout: to.Read, IdleTimeout: to.Idle}
	if l, err := zap.NewStdLogAt(log, zap.DebugLevel); err == nil {
		s.srv.ErrorLog = l // failed handshakes of whoever dials the port: not worth a line each
	}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("WAL buffer server stopped", zap.Error(err))
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sweep(ctx, o, auth, m, log)
	}()
	log.Info("WAL buffer serving", zap.String("buffer_addr", ln.Addr().String()), zap.Duration("retain_after_drain", o.RetainAfterDrain),
		zap.Int("max_readers", o.MaxReaders), zap.Int64("memory_bytes", s.Server.Cfg.MemoryBytes),
		zap.Bool("token", o.TokenFile != ""), zap.Bool("tls", o.TLS.CertFile != ""), zap.Bool("client_certs", o.TLS.ClientCAFile != ""))
	return s, nil
}

// openListener checks the credentials, then takes the port: none beyond loopback, or a bad token
// or certificate file, fails before the port is taken. The listener is TLS's when o.TLS has a
// certificate.
func openListener(o Options, m *Metrics, log *zap.Logger) (net.Listener, *listen.Auth, error) {
	if err := config.BufferCredentialsCheck(o.Addr, o.TokenFile, o.TLS.ClientCAFile, o.InsecureNoAuth); err != nil {
		return nil, nil, err
	}
	if warning := listen.Exposure(o.Addr, o.TokenFile, o.TLS.ClientCAFile, o.TLS.CertFile); warning != "" {
		log.Warn(warning, zap.String("buffer_addr", o.Addr))
	}
	var lm *listen.Metrics
	if m != nil {
		lm = m.Metrics
	}
	auth, err := listen.NewAuth(o.TokenFile, o.TLS.ClientCAFile != "", lm, log)
	if err != nil {
		return nil, nil, err
	}
	tlsCfg, err := listen.ServerTLS(o.TLS)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on --buffer-addr / SIGLAKE_BUFFER_ADDR %q: %w", o.Addr, err)
	}
	if o.wrap != nil {
		ln = o.wrap(ln)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	return ln, auth, nil
}

// newServer is the handler's side of o: a read's memory share is a quarter of the merge budget
// when o sets none.
func newServer(o Options, load func(ctx context.Context, name string) (*table.Table, error), m *Metrics, log *zap.Logger, auth *listen.Auth, writeTimeout time.Duration) *Server {
	mem := o.MemoryBytes
	if mem <= 0 {
		mem = merge.DefaultMemoryBudget() / 4
	}
	return &Server{
		Cfg: Config{WALDir: o.WALDir, Claims: o.Claims, MaxReaders: o.MaxReaders, MemoryBytes: mem,
			MaxResponseBytes: o.MaxResponseBytes, MaxSegments: DefaultMaxSegments, WriteTimeout: writeTimeout},
		LoadTable: load, Metrics: m, Log: log, Now: time.Now, Mem: memory.DefaultAllocator, Reserve: o.Reserve,
		PastRetention: o.PastRetention, Auth: auth}
}

// sweep removes retained segments past their time and re-reads the token file, at once and then
// every quarter of the retention (at least every second), until ctx is done. It sweeps with
// retention off too: segments a run with it on left behind.
func (s *Service) sweep(ctx context.Context, o Options, auth *listen.Auth, m *Metrics, log *zap.Logger) {
	keep := &segments.Retention{Now: time.Now}
	if s.Retention != nil {
		keep = s.Retention
	}
	tick := time.NewTicker(max(time.Second, keep.Keep/4))
	defer tick.Stop()
	for {
		auth.Refresh()
		if dirs, err := segments.Dirs(o.WALDir, o.Claims); err == nil {
			n, b, err := keep.Sweep(dirs)
			if err != nil {
				log.Warn("sweeping retained WAL segments", zap.Error(err))
			}
			if m != nil {
				m.Retained.Set(float64(n))
				m.RetainedB.Set(float64(b))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Addr is the address the buffer listens on.
func (s *Service) Addr() string { return s.ln.Addr().String() }

// Retire is the drain's hook: nil (remove at once) when nothing is retained.
func (s *Service) Retire() func(dir string, prev marks.Mark, segs []localwal.SegmentInfo) error {
	if s == nil || s.Retention == nil {
		return nil
	}
	return s.Retention.Retire
}

// Close stops serving (reads in flight get up to 5 s) and the sweep.
func (s *Service) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	s.stop()
	s.wg.Wait()
}

// Cleanup removes every retained segment under the WAL dir: a process with the buffer off calls
// it once, so segments a run with it on kept do not stay forever.
func Cleanup(walDir string, claims bool) error {
	dirs, err := segments.Dirs(walDir, claims)
	if err != nil {
		return err
	}
	_, _, err = (&segments.Retention{}).Sweep(dirs)
	return err
}
