package commit

import (
	"context"
	mrand "math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// TestSilentWaitSpread: a send waits its answer timeout plus a random part of up to half of it,
// so pods whose committer went quiet at once do not re-read and resend together.
func TestSilentWaitSpread(t *testing.T) {
	c := NewClient(ClientConfig{Interval: time.Second}, peermsg.NewLocalHub().Member("pod-0"), newView("owner"))
	base := c.answerTimeout()
	c.jitter = func(n int64) int64 { return n - 1 }
	if got := c.silentWait(); got != base+base/2 {
		t.Fatalf("longest wait %v, want %v", got, base+base/2)
	}
	r := mrand.New(mrand.NewPCG(1, 2))
	c.jitter = r.Int64N
	lo, hi := time.Duration(1<<62), time.Duration(0)
	for i := 0; i < 100; i++ {
		w := c.silentWait()
		if w < base || w > base+base/2 {
			t.Fatalf("wait %v outside [%v, %v]", w, base, base+base/2)
		}
		lo, hi = min(lo, w), max(hi, w)
	}
	if hi-lo < base/4 {
		t.Fatalf("100 waits within %v of each other: not spread", hi-lo)
	}
}

// loadCounter counts table loads while count says so.
type loadCounter struct {
	catalog.Catalog
	count func() bool
	n     atomic.Int32
}

func (c *loadCounter) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	if c.count() {
		c.n.Add(1)
	}
	return c.Catalog.LoadTable(ctx, id)
}

// TestQuietCommitterRereadsSpaced: a pod whose committer hears nothing resends after every
// silent wait but re-reads its mark from the catalog only after the 1st, 2nd, 4th, ... of them,
// then falls back after its bound.
func TestQuietCommitterRereadsSpaced(t *testing.T) {
	cl := newCluster(t)
	cl.hub.Member("owner") // a member still in gossip whose committer is gone: it answers nothing
	p := cl.pod("owner", func(c *ClientConfig) { c.FallbackAfter = 9 * time.Second })
	var sent atomic.Int32
	cl.hub.SetFilter(func(m peermsg.LocalMessage) peermsg.Fate {
		if m.Kind() == KindRequest {
			sent.Add(1)
			return peermsg.Fate{Drop: true}
		}
		return peermsg.Fate{}
	})
	lc := &loadCounter{count: func() bool { return sent.Load() > 0 && p.obs.fallbacks() == 0 }}
	p.env.Lake.WrapCatalog(func(c catalog.Catalog) catalog.Catalog { lc.Catalog = c; return lc })
	cl.seal(p, 1, 200, day)
	cl.drainAll()
	cl.checkOnce()
	if p.obs.count("fallback:"+FallbackTimeout) != 1 {
		t.Fatalf("fallbacks %v, want one timeout", p.obs.n)
	}
	// The answer timeout is 2.15 s, a wait at most 3.23 s: 9 s make at least 3 silent sends.
	sends, want := int(sent.Load()), 0
	for k := 1; k <= sends; k *= 2 { // after silent sends 1, 2, 4, ...
		want++
	}
	if sends < 3 || int(lc.n.Load()) != want {
		t.Fatalf("%d silent sends, %d mark re-reads; want at least 3 sends and %d re-reads", sends, lc.n.Load(), want)
	}
}
