package listen

import (
	"net/http"
	"time"
)

// Timeouts bound the buffer listener's connections, so that neither idle nor stalled readers
// hold descriptors or read slots (docs/wal-buffer.md "Limits").
type Timeouts struct {
	// ReadHeader and Read bound reading a request (its line and headers; the whole request).
	ReadHeader, Read time.Duration
	// Write bounds each write of an answer, not the answer: an answer streams for as long as its
	// reader keeps taking it, and a reader that takes nothing for this long is cut off and its
	// read slot freed.
	Write time.Duration
	// Idle closes a keep-alive connection that waits this long for its next request.
	Idle time.Duration
}

// DefaultTimeouts are the buffer listener's timeouts.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: 90 * time.Second}

// OrDefault is t with its zero fields taken from DefaultTimeouts.
func (t Timeouts) OrDefault() Timeouts {
	d := DefaultTimeouts
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	return Timeouts{ReadHeader: pick(t.ReadHeader, d.ReadHeader), Read: pick(t.Read, d.Read), Write: pick(t.Write, d.Write), Idle: pick(t.Idle, d.Idle)}
}

// WriteDeadlines gives every write of h's answers its own deadline of d (d <= 0: h as it is). The
// server's WriteTimeout would bound a whole answer, which streams for as long as its reader takes it.
func WriteDeadlines(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}, r)
	})
}

// deadlineWriter gives every write of an answer (every writeChunk of it) its own deadline. A
// reader that stops reading fills the socket buffers and blocks the next write; the deadline fails
// it, the answer is cut off and the read's slot is freed, however long the answer is meant to
// stream. A slow reader that keeps taking bytes keeps its answer.
type deadlineWriter struct {
	http.ResponseWriter
	rc  *http.ResponseController
	d   time.Duration
	set time.Time // when the deadline was last moved
}

// extend moves the deadline to d from now; at most every tenth of d, so a write has at least
// nine tenths of d and a stream of small writes does not reset a timer for each.
func (w *deadlineWriter) extend() {
	now := time.Now()
	if now.Sub(w.set) < w.d/10 {
		return
	}
	w.set = now
	_ = w.rc.SetWriteDeadline(now.Add(w.d))
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

// writeChunk is what one deadline covers: an Arrow record's body is one Write of up to megabytes,
// which a slow reader that keeps taking bytes could not take within one write timeout.
const writeChunk = 4 << 10

func (w *deadlineWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), writeChunk)]
		w.extend()
		m, err := w.ResponseWriter.Write(c)
		n += m
		if err != nil {
			return n, err
		}
		p = p[len(c):]
	}
	return n, nil
}

func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
