package maintain

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/test/faults"
	"github.com/siglake/siglake/test/testenv"
)

// TestPoisonInputsOnS3: on versitygw behind a fault proxy. While S3 answers every request with
// 503 for a while, maintenance fails and backs off but sets no file aside, and its rewrite
// commits once the fault ends. An object deleted from the bucket is classified missing, set aside
// after three failures, and the rest of its cluster is rewritten.
func TestPoisonInputsOnS3(t *testing.T) {
	s3 := testenv.S3(t)
	proxy, err := faults.NewHTTPProxy(s3.Endpoint, faults.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	te := testlake.NewWith(t, func(c *lake.Config) {
		c.Warehouse = s3.Warehouse(t)
		c.S3Endpoint, c.S3Region, c.S3AccessKey, c.S3SecretKey, c.S3PathStyle = proxy.URL, s3.Region, s3.AccessKey, s3.SecretKey, true
	})
	cfg := defaultConfig()
	cfg.DeleteTasks, cfg.SnapshotExpireInterval = false, 0
	e := &env{t: t, te: te, cfg: cfg, lake: te.Lake, drain: te.Drain}
	e.writeSegments("events", 9, 200, 5, time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	te.DrainAll()

	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	m := newMaintainer(t, e, e.lake, func() time.Time { return now })

	// Reads of data files answered 503 (then cut short) for a while: the rewrite fails as transient
	// and backs off; no file is set aside; once the fault ends, it commits.
	dataGET := func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/data/")
	}
	for i, kind := range []faults.Kind{faults.Status503, faults.Truncate} {
		proxy.Set(faults.Config{FailRate: 1, Kinds: []faults.Kind{kind}, Match: dataGET})
		rep, _ := m.Cycle(context.Background())
		if rep.Failed != 1 {
			t.Fatalf("cycle under %s: %+v, want the rewrite failed", kind, rep)
		}
		if got := testutil.ToFloat64(m.Metrics.Rewrite.Failures.WithLabelValues("l0", string(rewrite.ClassTransient))); got != float64(i+1) {
			t.Fatalf("transient failures %v after %s, want %d", got, kind, i+1)
		}
		now = now.Add(10 * time.Second)
		if rep, _ := m.Cycle(context.Background()); rep.Failed != 0 || !strings.Contains(strings.Join(m.State("events").LastPass.Skipped, " "), "backing off") {
			t.Fatalf("cycle 10 s after a transient failure: %+v; want the bin skipped, backing off", rep)
		}
		now = now.Add(backoffMax)
	}
	if proxy.Faults() == 0 {
		t.Fatal("the fault did not fire")
	}
	proxy.Set(faults.Config{})
	if n := len(lake.SkippedFiles(te.Table("events").Properties())); n != 0 {
		t.Fatalf("%d files set aside after transient failures, want none", n)
	}
	if rep, err := m.Cycle(context.Background()); err != nil || rep.Rewrites != 1 {
		t.Fatalf("cycle after the fault ended: %+v, %v; want the rewrite committed", rep, err)
	}

	// An object deleted from the bucket.
	e.writeSegments("events", 9, 200, 6, time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	te.DrainAll()
	files, err := lake.LiveFiles(context.Background(), te.Table("events"))
	if err != nil {
		t.Fatal(err)
	}
	var bad string
	for _, f := range files {
		if f.Partition == "2026-11-28" {
			bad = f.Path
			break
		}
	}
	p, err := s3.LocalPath(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		now = now.Add(backoffMin + time.Second)
		_, _ = m.Cycle(context.Background())
	}
	sk := lake.SkippedFiles(te.Table("events").Properties())
	if s, ok := sk[bad]; !ok || s.Class != string(rewrite.ClassMissing) {
		t.Fatalf("skip list %+v: want %s set aside as missing", sk, bad)
	}
	now = now.Add(backoffMin + time.Second)
	if rep, err := m.Cycle(context.Background()); err != nil || rep.Rewrites != 1 {
		t.Fatalf("cycle after the set-aside: %+v, %v; want the other eight rewritten", rep, err)
	}
}
