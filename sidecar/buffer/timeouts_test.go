package buffer

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/sidecar/buffer/listen"
	"github.com/siglake/siglake/sidecar/buffer/reader"
)

// startService runs the buffer's real listener over a lake with one table of sealed rows.
func startService(t *testing.T, readers int, to listen.Timeouts) *Service {
	t.Helper()
	h := newHarness(t, nil)
	// About 8 MB of answer: far more than a stalled reader's socket buffers take.
	for i := 0; i < 8; i++ {
		h.e.Seal("events", gen(t, uint64(100+i), 1, 4000, t0.Add(time.Duration(i)*time.Hour))...)
	}
	s, err := Start(Options{Addr: "127.0.0.1:0", WALDir: h.e.WAL, MaxReaders: readers, MemoryBytes: 256 << 20, MaxResponseBytes: 256 << 20, Timeouts: to},
		h.e.Lake.LoadTable, NewMetrics(prometheus.NewRegistry()), h.e.Log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// stalledReader sends a read and, once the answer has begun (200: it holds a read slot), never
// reads on; its receive buffer is kept small so the server's writes block soon. A read answered
// 429 (another read held the slot) is sent again.
func stalledReader(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	for try := 0; try < 20; try++ {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "GET /v1/buffer/events HTTP/1.1\r\nHost: buffer\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		status := make([]byte, len("HTTP/1.1 200"))
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(c, status); err != nil {
			t.Fatalf("the stalled read's status: %v", err)
		}
		if string(status) == "HTTP/1.1 200" {
			t.Cleanup(func() { c.Close() })
			return c
		}
		c.Close()
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the stalled read never got the read slot")
	return nil
}

// TestStalledReaderLosesItsSlot: a reader that sends its request and never reads holds the only
// read slot only until a write to it has waited the write timeout; then the next reader is
// answered 200, not 429.
func TestStalledReaderLosesItsSlot(t *testing.T) {
	s := startService(t, 1, listen.Timeouts{Write: 2 * time.Second})
	stalledReader(t, s.Addr())
	c := &reader.Client{Addr: "http://" + s.Addr()}
	// Wait until the stalled read holds the slot (a second read gets 429), then until it is freed.
	var err error
	held := false
	start := time.Now()
	for deadline := start.Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, err = c.Read(context.Background(), "events", reader.Query{}, func(arrow.RecordBatch) error { return nil })
		var se *reader.StatusError
		if errors.As(err, &se) && se.Code == http.StatusTooManyRequests {
			held = true
			continue
		}
		if held && err == nil {
			t.Logf("the stalled reader's slot was freed after %v", time.Since(start).Round(10*time.Millisecond))
			return
		}
		if !held {
			time.Sleep(50 * time.Millisecond) // the stalled read has not taken the slot yet
			continue
		}
		t.Fatalf("read after the stall: %v", err)
	}
	t.Fatalf("held=%v: the stalled reader kept the only read slot for 15 s (last read: %v)", held, err)
}

// TestIdleConnectionsAreClosed: a keep-alive connection that sends no next request is closed
// after the idle timeout.
func TestIdleConnectionsAreClosed(t *testing.T) {
	s := startService(t, 1, listen.Timeouts{Idle: 300 * time.Millisecond})
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /v1/buffer HTTP/1.1\r\nHost: buffer\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 || resp.Close {
		t.Fatalf("list: %d close=%v %v", resp.StatusCode, resp.Close, err)
	}
	resp.Body.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && !strings.Contains(errString(err), "reset") {
		t.Fatalf("idle connection: %v after %v, want it closed by the server", err, time.Since(start))
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// smallBuffers sets a socket's send and receive buffers to their minimum.
func smallBuffers(c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = errors.Join(syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096),
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096))
	})
	return errors.Join(err, serr)
}

// smallBufferListener accepts connections with small socket buffers.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = smallBuffers(rc)
		}
	}
	return c, nil
}

// slowConn hands its reader at most 4 KB every 50 ms: a slow client on a slow link.
type slowConn struct{ net.Conn }

func (c slowConn) Read(p []byte) (int, error) {
	time.Sleep(50 * time.Millisecond)
	return c.Conn.Read(p[:min(len(p), 4096)])
}

// TestSlowReaderGetsTheWholeAnswer: the read and write timeouts bound a stalled reader, not a slow
// one. An answer that a reader takes 4 KB every 50 ms streams for several times both timeouts and
// arrives whole: neither the listener's read timeout (the request was read long ago) nor the
// deadline of an earlier write cuts it.
func TestSlowReaderGetsTheWholeAnswer(t *testing.T) {
	h := newHarness(t, nil)
	const rows = 400 // about 100 KB of answer
	h.e.Seal("events", gen(t, 7, 1, rows, t0)...)
	s, err := Start(Options{Addr: "127.0.0.1:0", WALDir: h.e.WAL, MaxReaders: 1, MemoryBytes: 256 << 20, MaxResponseBytes: 256 << 20,
		Timeouts: listen.Timeouts{Read: 200 * time.Millisecond, Write: 500 * time.Millisecond},
		wrap:     func(ln net.Listener) net.Listener { return smallBufferListener{ln} }},
		h.e.Lake.LoadTable, NewMetrics(prometheus.NewRegistry()), h.e.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error { return smallBuffers(c) }}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return slowConn{c}, nil
	}}
	defer tr.CloseIdleConnections()
	c := &reader.Client{Addr: "http://" + s.Addr(), HTTP: &http.Client{Transport: tr}}
	start := time.Now()
	var got int64
	ans, err := c.Read(context.Background(), "events", reader.Query{}, func(r arrow.RecordBatch) error { got += r.NumRows(); return nil })
	took := time.Since(start)
	if err != nil || got != rows || ans.Rows != rows {
		t.Fatalf("slow reader: %d of %d rows after %v: %v", got, rows, took.Round(time.Millisecond), err)
	}
	if took < time.Second {
		t.Fatalf("the answer took %v: too short to show that the timeouts spare a slow reader", took)
	}
	t.Logf("%d rows in %v", got, took.Round(time.Millisecond))
}
