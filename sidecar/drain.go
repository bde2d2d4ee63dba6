package sidecar

import (
	"context"
	"errors"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/drain/batches"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/retention"
)

// DrainConfig is the part of the options the drain needs.
func DrainConfig(c config.Config) drain.Config {
	return drain.Config{WALDir: c.WALDir, NodeName: c.NodeName, CommitBatchTargetBytes: c.CommitBatchTargetBytes,
		CommitBatchMaxAge: c.CommitBatchMaxAge, MaxSegmentBytes: c.WALSegmentMaxBytes, TargetFileBytes: c.TargetFileBytes, SplitSparse: c.SplitSparse, Metadata: c.MetadataOptions,
		PastRetention: retention.DrainFilter(c.RetentionPeriod)}
}

// newDrain is the drain over l (nil: a drain that only reports the backlog) with the process's
// options, metrics, status and memory share.
func (p *Process) newDrain(l *lake.Lake) *drain.Drain {
	d := &drain.Drain{Cfg: DrainConfig(p.Cfg), Lake: l, Metrics: p.Metrics.Drain, Publish: p.Status, Log: p.Log, Now: p.Now,
		Mem: memory.DefaultAllocator, Retry: lake.DefaultRetry}
	if p.groupClient != nil { // never a nil *Client in the interface: the drain tests Group == nil
		d.Group = p.groupClient
	}
	if p.memory != nil {
		d.Reserve = p.memory.For(membudget.LoopDrain).Reserve
		d.MemoryLimit = p.memory.Limit()
	}
	return d
}

// drain runs the drain loop until stop is done (once: until the WAL is drained), with catalog
// claims when they are on.
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

// claimManager builds the catalog claim manager over the WAL root's stream subdirectories.
func (p *Process) claimManager(l *lake.Lake) *claim.Manager {
	root := p.Cfg.WALDir
	warned := false
	return &claim.Manager{
		Lake: l, Holder: p.Cfg.NodeName, TTL: p.Cfg.CatalogClaimTTL, Now: time.Now,
		Observer: instrument.ClaimObserver{Metrics: p.Metrics.Claims, Log: p.Log},
		Streams: func() ([]string, error) {
			streams, loose, err := batches.StreamDirs(root)
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
