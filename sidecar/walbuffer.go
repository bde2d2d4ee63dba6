package sidecar

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/buffer"
	"github.com/siglake/siglake/sidecar/buffer/listen"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membudget"
)

// bufferOptions is the part of the options the WAL buffer needs.
func bufferOptions(c config.Config) buffer.Options {
	return buffer.Options{Addr: c.BufferAddr, WALDir: c.WALDir, Claims: c.CatalogClaim, RetainAfterDrain: c.BufferRetainAfterDrain,
		MaxReaders: c.BufferMaxReaders, MemoryBytes: c.BufferMemoryBytes, MaxResponseBytes: c.BufferMaxResponseBytes,
		// The drain's own hook: the buffer leaves out exactly the rows the drain drops (promise 12).
		PastRetention: DrainConfig(c).PastRetention,
		TokenFile:     c.BufferTokenFile, InsecureNoAuth: c.BufferInsecureNoAuth,
		TLS: listen.TLSOptions{CertFile: c.BufferTLSCertFile, KeyFile: c.BufferTLSKeyFile, ClientCAFile: c.BufferTLSClientCAFile}}
}

// errCatalogNotOpen answers buffer reads (503) until the catalog is open.
var errCatalogNotOpen = errors.New("the catalog is not open yet")

// startBuffer starts the WAL buffer on its own listener when --buffer-addr is set and this
// process drains (the buffer serves the WAL it reads). Reads load tables through *l once it is
// set. With the buffer off it removes segments an earlier run retained.
func (p *Process) startBuffer(l *atomic.Pointer[lake.Lake]) error {
	if p.Cfg.BufferAddr == "" || !p.Cfg.Role.Drains() {
		if p.Cfg.BufferAddr != "" {
			p.Log.Warn("--buffer-addr is ignored: a process of role maintenance has no WAL to serve", zap.String("role", string(p.Cfg.Role)))
		} else if p.Cfg.Role.Drains() {
			if err := buffer.Cleanup(p.Cfg.WALDir, p.Cfg.CatalogClaim); err != nil {
				p.Log.Warn("removing segments a run with the WAL buffer on retained", zap.Error(err))
			}
		}
		return nil
	}
	load := func(ctx context.Context, name string) (*table.Table, error) {
		if lk := l.Load(); lk != nil {
			return lk.LoadTable(ctx, name)
		}
		return nil, errCatalogNotOpen
	}
	o := bufferOptions(p.Cfg)
	o.Timeouts = p.BufferTimeouts
	if p.memory != nil {
		o.Reserve = p.memory.For(membudget.LoopWALBuffer).Reserve
	}
	s, err := buffer.Start(o, load, p.Metrics.Buffer, p.Log)
	if err != nil {
		return err
	}
	p.buffer = s
	select {
	case p.BufferAddr <- s.Addr():
	default:
	}
	return nil
}

// stopBuffer stops the WAL buffer; a second call does nothing.
func (p *Process) stopBuffer() {
	if p.buffer != nil {
		p.buffer.Close()
		p.buffer = nil
	}
}
