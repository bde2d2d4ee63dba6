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
	"github.com/siglake/siglake/sidecar/buffer/segments"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
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
	// Timeouts bound the listener's connections; zero fields take DefaultTimeouts'.
	Timeouts Timeouts
	// PastRetention is the drain's retention hook (Server.PastRetention); nil: none.
	PastRetention func(t *table.Table, now time.Time) (*rowfilter.Filter, int64)
	// TokenFile holds the bearer tokens readers must send (Auth.TokenFile); "" takes none.
	TokenFile string
	// InsecureNoAuth lets Addr beyond loopback serve without a token or client CA
	// (--buffer-insecure-no-auth); without it Start refuses such an Addr.
	InsecureNoAuth bool
	// TLS puts the listener on HTTPS, with mutual TLS when it has a client CA.
	TLS TLSOptions

	// wrap, when set, wraps the listener (tests: connections with small socket buffers, so that
	// a slow reader's pace reaches the server's writes instead of filling kernel buffers).
	wrap func(net.Listener) net.Listener
}

// Timeouts bound the buffer listener's connections, so that neither idle nor stalled readers
// hold descriptors or read slots (docs/wal-buffer.md "Limits").
type Timeouts struct {
	// ReadHeader and Read bound reading a request (its line and headers; the whole request).
	ReadHeader, Read time.Duration
	// Write bounds each write of an answer, not the answer: an answer streams for as long as its
	// reader keeps taking it, and a reader that takes nothing for this long is cut off and its
	// read slot freed.
	Write time.Duration
	// Idle closes a keep-alive connection that waits this long for its next request.
	Idle time.Duration
}

// DefaultTimeouts are the buffer listener's timeouts.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: 90 * time.Second}

func (t Timeouts) orDefault() Timeouts {
	d := DefaultTimeouts
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	return Timeouts{ReadHeader: pick(t.ReadHeader, d.ReadHeader), Read: pick(t.Read, d.Read), Write: pick(t.Write, d.Write), Idle: pick(t.Idle, d.Idle)}
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
	// Credentials first: none beyond loopback, or a bad token or certificate file, fails before
	// the port is taken.
	if err := config.BufferCredentialsCheck(o.Addr, o.TokenFile, o.TLS.ClientCAFile, o.InsecureNoAuth); err != nil {
		return nil, err
	}
	auth, err := NewAuth(o.TokenFile, o.TLS.ClientCAFile != "", m, log)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := serverTLS(o.TLS)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on --buffer-addr / SIGLAKE_BUFFER_ADDR %q: %w", o.Addr, err)
	}
	if o.wrap != nil {
		ln = o.wrap(ln)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	mem := o.MemoryBytes
	if mem <= 0 {
		mem = merge.DefaultMemoryBudget() / 4
	}
	to := o.Timeouts.orDefault()
	s := &Service{ln: ln, Server: &Server{
		Cfg: Config{WALDir: o.WALDir, Claims: o.Claims, MaxReaders: o.MaxReaders, MemoryBytes: mem,
			MaxResponseBytes: o.MaxResponseBytes, MaxSegments: DefaultMaxSegments, WriteTimeout: to.Write},
		LoadTable: load, Metrics: m, Log: log, Now: time.Now, Mem: memory.DefaultAllocator, Reserve: o.Reserve,
		PastRetention: o.PastRetention, Auth: auth}}
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
	// Swept also with retention off: segments a run with it on left behind.
	keep := &segments.Retention{Now: time.Now}
	if s.Retention != nil {
		keep = s.Retention
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
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
	}()
	log.Info("WAL buffer serving", zap.String("buffer_addr", ln.Addr().String()), zap.Duration("retain_after_drain", o.RetainAfterDrain),
		zap.Int("max_readers", o.MaxReaders), zap.Int64("memory_bytes", mem),
		zap.Bool("token", o.TokenFile != ""), zap.Bool("tls", tlsCfg != nil), zap.Bool("client_certs", o.TLS.ClientCAFile != ""))
	return s, nil
}

// Addr is the address the buffer listens on.
func (s *Service) Addr() string { return s.ln.Addr().String() }

// Retire is the drain's hook: nil (remove at once) when nothing is retained.
func (s *Service) Retire() func(dir string, prev lake.Mark, segs []localwal.SegmentInfo) error {
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
