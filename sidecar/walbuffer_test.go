package sidecar

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/buffer/segments"
	"github.com/siglake/siglake/sidecar/config"
)

// TestProcessServesTheBuffer: with --buffer-addr set the process serves the WAL buffer on its own
// listener (not the metrics one), and its drain retires committed segments into retention, from
// which a reader of an older snapshot is answered; with it off, a start removes what a run with it
// on retained.
func TestProcessServesTheBuffer(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.HTTPAddr, c.BufferAddr = "127.0.0.1:0", "127.0.0.1:0"
		c.DrainPollInterval, c.CommitBatchMaxAge = 10*time.Millisecond, time.Hour
		c.Role, c.BufferRetainAfterDrain = config.RoleDrain, time.Hour
	})
	sealed := e.writeSegments("events", 3, 100, 1, time.Now().UTC())
	p := NewProcess(e.cfg, zap.NewNop(), "test")
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx, false) }()
	httpAddr, bufAddr := <-p.Addr, <-p.BufferAddr
	if httpAddr == bufAddr {
		t.Fatalf("the buffer shares the HTTP listener %s", httpAddr)
	}
	c := &reader.Client{Addr: bufAddr}
	var got RowSum
	read := func(q reader.Query) reader.Answer {
		t.Helper()
		got = RowSum{}
		var ans reader.Answer
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if ans, err = c.Read(ctx, "events", q, func(rec arrow.RecordBatch) error { return got.Add(rec, eventColumns...) }); err == nil || time.Now().After(deadline) {
				break // 503 until the catalog is open
			}
			got = RowSum{}
		}
		if err != nil {
			t.Fatal(err)
		}
		return ans
	}
	read(reader.Query{})
	if got != sealed {
		t.Fatalf("buffer %+v, sealed %+v", got, sealed)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}

	// Drain everything (--once), as the same process would: the segments go into retention, and a
	// reader whose snapshot has none of them still gets them all.
	p = NewProcess(e.cfg, zap.NewNop(), "test")
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { ran <- p.Run(ctx, true) }()
	<-p.Addr
	c.Addr = <-p.BufferAddr
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	kept, _ := filepath.Glob(filepath.Join(e.cfg.WALDir, segments.RetainedDir, "events.*"))
	if len(kept) != 3 || e.tableSum("events") != sealed {
		t.Fatalf("retained %v, table %+v", kept, e.tableSum("events"))
	}
	p = NewProcess(e.cfg, zap.NewNop(), "test")
	go func() { ran <- p.Run(ctx, false) }()
	<-p.Addr
	c.Addr = <-p.BufferAddr
	read(reader.Query{After: reader.Marks{}})
	if got != sealed {
		t.Fatalf("from retention %+v, want %+v", got, sealed)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}

	// Off: the retained segments go at start.
	e.cfg.BufferAddr = ""
	p = NewProcess(e.cfg, zap.NewNop(), "test")
	ctx, cancel = context.WithCancel(context.Background())
	go func() { ran <- p.Run(ctx, false) }()
	<-p.Addr
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if kept, _ = filepath.Glob(filepath.Join(e.cfg.WALDir, segments.RetainedDir, "events.*")); len(kept) == 0 {
			break
		}
	}
	cancel()
	<-ran
	if len(kept) != 0 {
		t.Fatalf("a process with the buffer off left %v", kept)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.WALDir, segments.RetainedDir)); err != nil {
		t.Fatal(err) // the directory itself may stay
	}
}

// TestProcessBufferLeavesOutRowsPastRetention: the process hands its buffer the drain's
// retention hook, so a segment of rows 40 days old under a 30-day SIGLAKE_RETENTION_PERIOD is not
// served (the drain would drop them), while the fresh segments are.
func TestProcessBufferLeavesOutRowsPastRetention(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.HTTPAddr, c.BufferAddr = "127.0.0.1:0", "127.0.0.1:0"
		c.DrainPollInterval, c.CommitBatchMaxAge = 10*time.Millisecond, time.Hour
		c.Role, c.RetentionPeriod = config.RoleDrain, 30*24*time.Hour
	})
	e.writeSegments("events", 1, 100, 1, time.Now().UTC().Add(-40*24*time.Hour))
	fresh := e.writeSegments("events", 2, 100, 2, time.Now().UTC())
	p := NewProcess(e.cfg, zap.NewNop(), "test")
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx, false) }()
	<-p.Addr
	c := &reader.Client{Addr: <-p.BufferAddr}
	var got RowSum
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got = RowSum{}
		if _, err = c.Read(ctx, "events", reader.Query{}, func(rec arrow.RecordBatch) error { return got.Add(rec, eventColumns...) }); err == nil || time.Now().After(deadline) {
			break // 503 until the catalog is open
		}
	}
	cancel()
	if rerr := <-ran; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got != fresh {
		t.Fatalf("buffer served %d rows, want the %d fresh ones (%+v, want %+v)", got.Rows, fresh.Rows, got, fresh)
	}
}

// TestProcessWarnsAboutAnUnauthenticatedBuffer: a buffer beyond loopback started with the
// opt-out, or with a token over plain HTTP, logs a warning at start naming the option to set;
// a token file the process cannot read stops the start with its name.
func TestProcessWarnsAboutAnUnauthenticatedBuffer(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("process-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, tokenFile, want string
		insecure              bool
	}{
		{"opt-out", "", "--buffer-token-file / SIGLAKE_BUFFER_TOKEN_FILE", true},
		{"token over HTTP", tokens, "--buffer-tls-cert-file / SIGLAKE_BUFFER_TLS_CERT_FILE", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(cfg *config.Config) {
				cfg.HTTPAddr, cfg.BufferAddr, cfg.BufferTokenFile, cfg.BufferInsecureNoAuth = "127.0.0.1:0", "0.0.0.0:0", c.tokenFile, c.insecure
				cfg.Role = config.RoleDrain
			})
			if err := os.MkdirAll(e.cfg.WALDir, 0o755); err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zap.WarnLevel)
			p := NewProcess(e.cfg, zap.New(core), "test")
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan error, 1)
			go func() { ran <- p.Run(ctx, false) }()
			select {
			case <-p.BufferAddr:
			case err := <-ran:
				t.Fatalf("the process ended before it served the buffer: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("the buffer did not start in 30 s")
			}
			cancel()
			if err := <-ran; err != nil {
				t.Fatal(err)
			}
			found := false
			for _, l := range logs.FilterMessageSnippet("WAL buffer").All() {
				found = found || strings.Contains(l.Message, c.want)
			}
			if !found {
				t.Fatalf("no warning naming %s: %v", c.want, logs.All())
			}
		})
	}
	e := newEnv(t, func(cfg *config.Config) {
		cfg.HTTPAddr, cfg.BufferAddr, cfg.BufferTokenFile, cfg.Role = "127.0.0.1:0", "127.0.0.1:0", filepath.Join(t.TempDir(), "missing"), config.RoleDrain
	})
	if err := os.MkdirAll(e.cfg.WALDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := NewProcess(e.cfg, zap.NewNop(), "test").Run(ctx, false)
	if err == nil || !strings.Contains(err.Error(), "SIGLAKE_BUFFER_TOKEN_FILE") {
		t.Fatalf("a missing token file: %v", err)
	}
}

// TestProcessRefusesAnUnauthenticatedBuffer: a Config built in code (Validate never saw it) with
// the buffer beyond loopback and neither credentials nor the opt-out does not start: the error
// names the options, and nothing listens on the buffer's address.
func TestProcessRefusesAnUnauthenticatedBuffer(t *testing.T) {
	e := newEnv(t, func(cfg *config.Config) {
		cfg.HTTPAddr, cfg.BufferAddr, cfg.Role = "127.0.0.1:0", "0.0.0.0:0", config.RoleDrain
	})
	if err := os.MkdirAll(e.cfg.WALDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := NewProcess(e.cfg, zap.NewNop(), "test")
	err := p.Run(ctx, false)
	for _, name := range []string{"SIGLAKE_BUFFER_ADDR", "SIGLAKE_BUFFER_TOKEN_FILE", "SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE", "SIGLAKE_BUFFER_INSECURE_NO_AUTH"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("a buffer on 0.0.0.0 without credentials: Run returned %v, want an error naming %s", err, name)
		}
	}
	select {
	case a := <-p.BufferAddr:
		t.Fatalf("the buffer listened on %s", a)
	default:
	}
}
