package sidecar

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/lake/deadline"
)

// TestCatalogWritableFromCommits: a catalog that answers reads but refuses commits (a full disk)
// shows as siglake_catalog_writable 0 and an unready /readyz, which the read ping does not clear;
// a successful commit restores both; a commit the catalog holds past --commit-timeout is logged at
// warn with its table and elapsed time when it passes half the deadline and when it is abandoned,
// counted in both counters, and also makes the catalog unwritable.
func TestCatalogWritableFromCommits(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	core, logs := observer.New(zapcore.WarnLevel)
	p := NewProcess(e.cfg, zap.New(core), "test")
	e.lake.WatchCommits(p.observeCommit) // what Run does once the lake is open
	p.setWritable("", nil)
	const (
		pass = iota
		refuse
		stall
	)
	var mode atomic.Int32
	catalogtest.Hook(e.lake, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		switch mode.Load() {
		case refuse:
			return nil, "", errors.New("sqlite: database or disk is full (13)")
		case stall:
			<-ctx.Done()
			return nil, "", ctx.Err()
		}
		return next(ctx, id, reqs, ups)
	})
	srv := httptest.NewServer(Handler(p.Metrics, p.Status, &p.Ready, time.Now))
	defer srv.Close()
	readyz := func() (int, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	writable := func() float64 { return testutil.ToFloat64(p.Metrics.CatalogWritable) }

	p.checkCatalog(ctx, e.lake) // the read ping: ready
	if code, _ := readyz(); code != 200 || writable() != 1 {
		t.Fatalf("at start: /readyz %d, writable %v", code, writable())
	}
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	e.writeSegments("events", 1, 500, 1, start)
	if _, err := e.drain.Cycle(ctx, true); err != nil { // creates the table outside the faults
		t.Fatal(err)
	}

	mode.Store(refuse)
	e.writeSegments("events", 1, 500, 2, start.Add(time.Hour))
	if _, err := e.drain.Cycle(ctx, true); err == nil {
		t.Fatal("a refused commit did not fail the batch")
	}
	p.checkCatalog(ctx, e.lake) // reads still answer
	code, body := readyz()
	if writable() != 0 || code != 503 || !strings.Contains(body, "disk is full") {
		t.Fatalf("catalog refusing commits: writable %v, /readyz %d %q", writable(), code, body)
	}
	if r := p.Status.Snapshot(time.Now()); !strings.Contains(r.CatalogWriteError, "disk is full") {
		t.Fatalf("status catalog_write_error %q", r.CatalogWriteError)
	}

	mode.Store(pass)
	if _, err := e.drain.Cycle(ctx, true); err != nil {
		t.Fatal(err)
	}
	if code, body := readyz(); writable() != 1 || code != 200 {
		t.Fatalf("after a successful commit: writable %v, /readyz %d %q", writable(), code, body)
	}

	e.lake.SetCommitTimeout(300 * time.Millisecond)
	mode.Store(stall)
	e.writeSegments("events", 1, 500, 3, start.Add(2*time.Hour))
	if _, err := e.drain.Cycle(ctx, true); !errors.Is(err, deadline.ErrCommitDeadline) {
		t.Fatalf("held commit: %v, want the deadline", err)
	}
	slow := testutil.ToFloat64(p.Metrics.CommitSlow.WithLabelValues("events"))
	timeouts := testutil.ToFloat64(p.Metrics.CommitTimeouts.WithLabelValues("events"))
	if slow < 1 || timeouts < 1 || slow != timeouts {
		t.Fatalf("slow %v, timeouts %v; want one of each per abandoned attempt", slow, timeouts)
	}
	if code, body := readyz(); writable() != 0 || code != 503 || !strings.Contains(body, "--commit-timeout") {
		t.Fatalf("hung commits: writable %v, /readyz %d %q", writable(), code, body)
	}
	for _, msg := range []string{"catalog commit still running past half its deadline", "catalog commit abandoned at its deadline"} {
		seen := logs.FilterMessageSnippet(msg).All()
		if len(seen) != int(timeouts) {
			t.Fatalf("%d warnings %q, want %v", len(seen), msg, timeouts)
		}
		f := seen[0].ContextMap()
		if f["table"] != "events" || f["elapsed"] == nil || seen[0].Level != zapcore.WarnLevel {
			t.Fatalf("warning %q: level %v, fields %v; want table and elapsed", msg, seen[0].Level, f)
		}
	}
}

// TestOneTableRefusedKeepsUnwritable: the catalog refuses one table's commits while another's
// succeed; the process stays unwritable (gauge 0, /readyz 503, the table in the status) until that
// table commits, and a failing table the process no longer drains nor owns is forgotten.
func TestOneTableRefusedKeepsUnwritable(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	p := NewProcess(e.cfg, zap.NewNop(), "test")
	e.lake.WatchCommits(p.observeCommit)
	p.setWritable("", nil)
	var refuse atomic.Bool
	catalogtest.Hook(e.lake, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if refuse.Load() && id[len(id)-1] == "audit" {
			return nil, "", errors.New("quota exceeded for audit")
		}
		return next(ctx, id, reqs, ups)
	})
	writable := func() float64 { return testutil.ToFloat64(p.Metrics.CatalogWritable) }
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	e.writeSegments("audit", 1, 200, 1, start)
	e.writeSegments("events", 1, 200, 2, start)
	if _, err := e.drain.Cycle(ctx, true); err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	for i := range 3 {
		e.writeSegments("audit", 1, 200, uint64(10+i), start.Add(time.Duration(i+1)*time.Hour))
		e.writeSegments("events", 1, 200, uint64(20+i), start.Add(time.Duration(i+1)*time.Hour))
		_, _ = e.drain.Cycle(ctx, true) // audit refused, events committed after it
		r := p.Status.Snapshot(time.Now())
		if writable() != 0 || !strings.Contains(r.CatalogWriteErrors["audit"], "quota exceeded") || len(r.CatalogWriteErrors) != 1 {
			t.Fatalf("round %d: writable %v, write errors %v; want 0 while audit is refused", i, writable(), r.CatalogWriteErrors)
		}
	}
	p.forgetWriteErrors() // audit still has sealed segments: kept
	if writable() != 0 {
		t.Fatal("a failing table with segments waiting was forgotten")
	}
	refuse.Store(false)
	if _, err := e.drain.Cycle(ctx, true); err != nil {
		t.Fatal(err)
	}
	if writable() != 1 || p.Status.Snapshot(time.Now()).CatalogWriteErrors != nil {
		t.Fatalf("after audit committed: writable %v", writable())
	}

	// Refused again, then its segments go (quarantined, say): nothing will commit to it.
	refuse.Store(true)
	e.writeSegments("audit", 1, 200, 40, start.Add(10*time.Hour))
	_, _ = e.drain.Cycle(ctx, true)
	if writable() != 0 {
		t.Fatal("a refused commit left the catalog writable")
	}
	segs, err := localwal.Scan(e.cfg.WALDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		if err := os.Remove(s.Path); err != nil {
			t.Fatal(err)
		}
	}
	p.forgetWriteErrors()
	if writable() != 1 {
		t.Fatal("a failing table no longer drained nor owned was kept")
	}
}
