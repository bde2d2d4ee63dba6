package claim

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/test/testenv"
)

// BenchmarkClaimTick measures one claim tick (read the claims table, CAS-commit the renewal of
// six claims and the heartbeat) against the embedded SQLite catalog and PostgreSQL, with a local
// warehouse for the metadata files. Its inverse is the claim commit rate one catalog sustains
// for one claimer; with the default TTL each process needs one commit per 10 s.
func BenchmarkClaimTick(b *testing.B) {
	for _, cat := range []string{"sqlite", "postgres"} {
		b.Run(cat, func(b *testing.B) {
			dir := b.TempDir()
			uri := "sqlite:" + filepath.Join(dir, "catalog.db")
			if cat == "postgres" {
				uri = testenv.PostgresDB(b)
			}
			l, err := lake.Open(context.Background(), lake.Config{Catalog: uri, Warehouse: filepath.Join(dir, "warehouse"), Namespace: "siglake"})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			m := &Manager{Lake: l, Holder: "pod-a", TTL: 30 * time.Second, Now: time.Now,
				Streams: func() ([]string, error) { return []string{"s1", "s2", "s3", "s4", "s5", "s6"}, nil },
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := m.Tick(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}
