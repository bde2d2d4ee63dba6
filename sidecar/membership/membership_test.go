package membership

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip"
)

type recorder struct {
	mu      sync.Mutex
	members []gossip.Member
	leases  map[string]gossip.Lease
}

func (r *recorder) Tables() []string { return []string{"events", "audit"} }
func (r *recorder) Members(m []gossip.Member) {
	r.mu.Lock()
	r.members = m
	r.mu.Unlock()
}
func (r *recorder) Leases(l map[string]gossip.Lease) {
	r.mu.Lock()
	r.leases = l
	r.mu.Unlock()
}

// TestWatchPublishesLeasesOfTheNamespace: the process's tables are tracked under their
// namespace.table lease keys and published back by table name, with owner and candidates.
func TestWatchPublishesLeasesOfTheNamespace(t *testing.T) {
	cfg := gossip.DefaultConfig()
	cfg.NodeName, cfg.Disabled, cfg.Roles = "solo", true, []string{gossip.RoleMaintenance}
	c, err := gossip.Start(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	if err := c.SetCatalog("cat", time.Second); err != nil {
		t.Fatal(err)
	}
	c.Track("other.events") // another namespace's table: not this process's to show
	r := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	Watch(ctx, c, "logs", r, zap.NewNop())
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.leases) != 2 {
		t.Fatalf("published leases %v, want events and audit", r.leases)
	}
	for _, name := range []string{"events", "audit"} {
		l := r.leases[name]
		if l.Table != "logs."+name || l.Owner != "solo" || len(l.Candidates) != 1 || l.Candidates[0] != "solo" {
			t.Fatalf("lease of %s: %+v", name, l)
		}
	}
	if len(r.members) != 1 || r.members[0].Catalog != "cat" {
		t.Fatalf("members %+v", r.members)
	}
}
