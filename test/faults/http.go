// Package faults puts real network faults between siglake and its backends, for tests: an HTTP
// proxy in front of the S3 server that fails a configured fraction of requests (5xx answers,
// connection resets, responses lost after the store acted, truncated bodies = short reads, added
// latency), and a TCP proxy in front of PostgreSQL that can cut every connection. The code under
// test, its AWS SDK retries and its database driver see exactly what a flaky network shows them; no
// mock stands in for the server.
package faults

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is a fault the HTTP proxy injects.
type Kind string

const (
	// Status500 answers 500 InternalError without forwarding: the store did nothing.
	Status500 Kind = "500"
	// Status503 answers 503 SlowDown without forwarding (the store's throttling answer).
	Status503 Kind = "503"
	// Reset closes the connection (RST) before forwarding: a network failure mid-request.
	Reset Kind = "reset"
	// LostResponse forwards the request (the store acts: an object is written or deleted) and then
	// resets the connection, so the client does not know it succeeded.
	LostResponse Kind = "lost_response"
	// Truncate forwards a GET and sends the full Content-Length but only half the body, then breaks
	// the connection: a short read. Other methods get Status503 instead. (An empty body is cut at
	// zero bytes, which a client notices only if it expected some.)
	Truncate Kind = "truncate"
	// Pass is a request forwarded untouched (for the counts).
	Pass Kind = "pass"
)

// AllKinds are the failure kinds a proxy picks from by default.
var AllKinds = []Kind{Status500, Status503, Reset, LostResponse, Truncate}

// Config says which fraction of requests fail, how, and how slow every request is.
type Config struct {
	// FailRate is the fraction of requests (0..1) that get a fault.
	FailRate float64
	// Kinds are the faults to pick from, uniformly; empty means AllKinds.
	Kinds []Kind
	// Latency is the most added to each request before it is handled (uniform in [0, Latency]).
	Latency time.Duration
	// Seed makes the fault sequence repeatable for a given request order.
	Seed uint64
	// Match, when set, limits faults to the requests it accepts (say, GETs of data files); the
	// others pass untouched.
	Match func(r *http.Request) bool
}

// HTTPProxy is a loopback HTTP proxy in front of one backend (e.g. versitygw). Point the client's
// endpoint at URL. It keeps the Host header, so SigV4 signatures stay valid.
type HTTPProxy struct {
	URL    string
	target string

	mu  sync.Mutex
	cfg Config
	rng *rand.Rand

	counts sync.Map // Kind -> *atomic.Int64
	srv    *http.Server
	ln     net.Listener
	tr     *http.Transport
}

// NewHTTPProxy starts a proxy on 127.0.0.1 in front of target (http://host:port).
func NewHTTPProxy(target string, cfg Config) (*HTTPProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the fault proxy: %w", err)
	}
	p := &HTTPProxy{URL: "http://" + ln.Addr().String(), target: target, ln: ln,
		tr: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64, ResponseHeaderTimeout: time.Minute}}
	p.Set(cfg)
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// Set replaces the fault configuration (e.g. FailRate 0 to heal the network).
func (p *HTTPProxy) Set(cfg Config) {
	if len(cfg.Kinds) == 0 {
		cfg.Kinds = AllKinds
	}
	p.mu.Lock()
	p.cfg = cfg
	p.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	p.mu.Unlock()
}

// Close stops the proxy and drops its connections.
func (p *HTTPProxy) Close() error {
	p.tr.CloseIdleConnections()
	return p.srv.Close()
}

// Counts returns how many requests got each fault (and Pass).
func (p *HTTPProxy) Counts() map[Kind]int64 {
	out := map[Kind]int64{}
	p.counts.Range(func(k, v any) bool {
		out[k.(Kind)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// Faults is the number of requests that got a fault of any kind.
func (p *HTTPProxy) Faults() int64 {
	var n int64
	for k, v := range p.Counts() {
		if k != Pass {
			n += v
		}
	}
	return n
}

func (p *HTTPProxy) count(k Kind) {
	v, _ := p.counts.LoadOrStore(k, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// decide picks this request's fault and delay.
func (p *HTTPProxy) decide(r *http.Request) (Kind, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d time.Duration
	if p.cfg.Latency > 0 {
		d = time.Duration(p.rng.Int64N(int64(p.cfg.Latency) + 1))
	}
	if p.cfg.Match != nil && !p.cfg.Match(r) {
		return Pass, d
	}
	if p.rng.Float64() >= p.cfg.FailRate {
		return Pass, d
	}
	return p.cfg.Kinds[p.rng.IntN(len(p.cfg.Kinds))], d
}

func (p *HTTPProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, delay := p.decide(r)
	if kind == Truncate && r.Method != http.MethodGet {
		kind = Status503
	}
	p.count(kind)
	if delay > 0 {
		time.Sleep(delay)
	}
	switch kind {
	case Status500:
		s3Error(w, r, http.StatusInternalServerError, "InternalError", "injected fault")
		return
	case Status503:
		s3Error(w, r, http.StatusServiceUnavailable, "SlowDown", "injected fault")
		return
	case Reset:
		reset(w)
		return
	}
	resp, err := p.forward(r)
	if err != nil {
		s3Error(w, r, http.StatusBadGateway, "InternalError", "fault proxy: "+err.Error())
		return
	}
	defer resp.Body.Close()
	if kind == LostResponse {
		io.Copy(io.Discard, resp.Body)
		reset(w)
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if kind == Truncate {
		body, size := io.Reader(resp.Body), resp.ContentLength
		if size < 0 { // chunked: learn the length first
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				reset(w)
				return
			}
			body, size = bytes.NewReader(b), int64(len(b))
		}
		w.Header().Del("Transfer-Encoding")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(resp.StatusCode)
		io.CopyN(w, body, size/2)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // the server closes the connection mid-body
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// forward sends r to the target with its signed headers and Host untouched.
func (p *HTTPProxy) forward(r *http.Request) (*http.Response, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Header.Del("Expect") // the proxy already said 100-continue to the client
	out.Host = r.Host
	out.ContentLength = r.ContentLength
	if r.ContentLength == 0 {
		out.Body = http.NoBody
	}
	return p.tr.RoundTrip(out)
}

// s3Error answers like an S3 server does, after consuming the request body so the client's write
// completes and it reads the answer (not a broken pipe).
func s3Error(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource></Error>`,
		code, msg, r.URL.Path)
}

// reset closes the client's connection with an RST (SO_LINGER 0), without an HTTP answer.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}
