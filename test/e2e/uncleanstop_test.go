package e2e

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar"
)

// TestUncleanStopIsReported: a compactor killed with SIGKILL mid-batch leaves its batch in flight;
// the next start says so in one warn line, in /debug/status (unclean_stop, with the files the batch
// left for gc) and in siglake_drain_interrupted_batch_files. After a clean stop (SIGTERM) the next
// start reports nothing.
func TestUncleanStopIsReported(t *testing.T) {
	s := newSite(t)
	s.walgen("pod-a", 40000, 1)
	killed := false
	for attempt := 0; attempt < 10 && !killed; attempt++ {
		lines := make(chan string, 4096)
		cmd := s.compactor(lines, "--log-level", "debug")
		deadline := time.After(20 * time.Second)
	wait:
		for {
			select {
			case l := <-lines:
				if strings.Contains(l, "committing batch") {
					break wait
				}
			case <-deadline:
				break wait
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		m, _ := filepath.Glob(filepath.Join(s.wal, ".inflight-*"))
		killed = len(m) > 0
	}
	if !killed {
		t.Fatal("no kill landed inside a batch in 10 attempts")
	}

	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	lines := make(chan string, 4096)
	cmd := s.compactor(lines, "--http-addr", addr)
	warned := ""
	deadline := time.After(30 * time.Second)
	for warned == "" {
		select {
		case l := <-lines:
			if strings.Contains(l, "stopped mid-batch") {
				warned = l
			}
		case <-deadline:
			t.Fatal("the start after SIGKILL logged no unclean-stop line")
		}
	}
	if !strings.Contains(warned, `"level":"warn"`) || !strings.Contains(warned, `"tables":["events"]`) {
		t.Fatalf("unclean-stop line: %s", warned)
	}
	var r sidecar.StatusReport
	waitUntil(t, "unclean_stop in /debug/status", 10*time.Second, func() (bool, string) {
		var err error
		r, err = status(addr)
		return err == nil && r.UncleanStop != nil, fmt.Sprint(err)
	})
	u := r.UncleanStop
	if len(u.Batches) != 1 || u.Batches[0].Table != "events" || u.Batches[0].LeftForGC > u.Batches[0].FilesWritten || u.LeftForGC != u.Batches[0].LeftForGC {
		t.Fatalf("unclean_stop in /debug/status: %+v", *u)
	}
	metric := fmt.Sprintf("siglake_drain_interrupted_batch_files %d", u.LeftForGC)
	if body := get(t, "http://"+addr+"/metrics"); !strings.Contains(body, metric) {
		t.Fatalf("/metrics lacks %q", metric)
	}
	t.Logf("interrupted batch: %+v", u.Batches[0])

	// A clean stop leaves nothing to report.
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("compactor after SIGTERM: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(s.wal, ".inflight-*")); len(m) > 0 {
		t.Fatalf("a clean stop left %v", m)
	}
	port = freePort(t)
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	lines = make(chan string, 4096)
	cmd = s.compactor(lines, "--http-addr", addr)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitUntil(t, "the status", 10*time.Second, func() (bool, string) { _, err := status(addr); return err == nil, fmt.Sprint(err) })
	time.Sleep(500 * time.Millisecond)
	if r, _ := status(addr); r.UncleanStop != nil {
		t.Fatalf("after a clean stop the start reports an unclean one: %+v", *r.UncleanStop)
	}
	for len(lines) > 0 {
		if l := <-lines; strings.Contains(l, "stopped mid-batch") {
			t.Fatalf("after a clean stop: %s", l)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
