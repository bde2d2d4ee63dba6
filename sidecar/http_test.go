package sidecar

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/drain"
)

// TestIdleHTTPConnectionsAreClosed: a keep-alive connection to the metrics and status listener
// that sends no next request is closed after the idle timeout, so idle clients cannot pile up
// descriptors the drain needs.
func TestIdleHTTPConnectionsAreClosed(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.HTTPAddr, c.Role = "127.0.0.1:0", config.RoleDrain })
	if err := os.MkdirAll(e.cfg.WALDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := NewProcess(e.cfg, zap.NewNop(), "test")
	p.HTTPTimeouts.Idle = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx, false) }()
	var addr string
	select {
	case addr = <-p.Addr:
	case err := <-ran:
		t.Fatalf("run: %v", err)
	}
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for _, path := range []string{"/healthz", "/metrics"} { // the connection is kept alive between them
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: sidecar\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || resp.Close {
			t.Fatalf("%s: %d close=%v %v", path, resp.StatusCode, resp.Close, err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && (err == nil || !strings.Contains(err.Error(), "reset")) {
		t.Fatalf("idle connection: %v after %v, want it closed by the server", err, time.Since(start))
	}
}

// TestStatusPageShowsUncleanStop: the overview served by the process shows an unclean stop the
// start found, not only /debug/status.
func TestStatusPageShowsUncleanStop(t *testing.T) {
	st := NewStatus("n", config.RoleAll, "test", time.Now())
	st.UncleanStop(&drain.UncleanStop{DetectedAt: time.Now(), LeftForGC: 1, Batches: []drain.InterruptedBatch{{Table: "events", FilesWritten: 1, LeftForGC: 1}}})
	srv := httptest.NewServer(Handler(NewMetrics(), st, &Readiness{}, time.Now))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "previous run killed mid-batch") {
		t.Fatalf("status page without the unclean stop:\n%s", body)
	}
}

// TestTablePagesRenderTwoAtOnce: beyond two table pages in progress the process answers 503 with
// Retry-After instead of drawing more at once.
func TestTablePagesRenderTwoAtOnce(t *testing.T) {
	st := NewStatus("n", config.RoleAll, "test", time.Now())
	srv := httptest.NewServer(Handler(NewMetrics(), st, &Readiness{}, time.Now))
	defer srv.Close()
	for i := 0; i < cap(tablePageSlots); i++ {
		tablePageSlots <- struct{}{}
	}
	resp, err := http.Get(srv.URL + "/status/table/events")
	for i := 0; i < cap(tablePageSlots); i++ {
		<-tablePageSlots
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("with two renders in progress: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	// A free slot draws again (events is unknown here: 404, not 503).
	resp, err = http.Get(srv.URL + "/status/table/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("with free slots: %s", resp.Status)
	}
}
