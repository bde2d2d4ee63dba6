package faults

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func backend(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var writes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "" {
			t.Errorf("proxy dropped the Host header")
		}
		if r.Method == http.MethodPut {
			b, _ := io.ReadAll(r.Body)
			writes.Add(int64(len(b)))
		}
		w.Header().Set("X-Host-Seen", r.Host)
		w.Write(bytes.Repeat([]byte("z"), 4096))
	}))
	t.Cleanup(srv.Close)
	return srv, &writes
}

func TestHTTPProxyPassesThroughKeepingHost(t *testing.T) {
	srv, _ := backend(t)
	p, err := NewHTTPProxy(srv.URL, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	resp, err := http.Get(p.URL + "/bucket/key?x=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(b) != 4096 || resp.Header.Get("X-Host-Seen") != strings.TrimPrefix(p.URL, "http://") {
		t.Fatalf("got %d bytes, backend saw host %q (want the proxy's, as the client signed it)", len(b), resp.Header.Get("X-Host-Seen"))
	}
	if p.Counts()[Pass] != 1 || p.Faults() != 0 {
		t.Fatalf("counts %v", p.Counts())
	}
}

// TestHTTPProxyFaultKinds checks what a client sees for each kind.
func TestHTTPProxyFaultKinds(t *testing.T) {
	srv, writes := backend(t)
	for _, c := range []struct {
		kind   Kind
		method string
		check  func(*http.Response, []byte, error) string
	}{
		{Status500, "GET", func(r *http.Response, b []byte, err error) string {
			if err != nil || r.StatusCode != 500 || !bytes.Contains(b, []byte("<Code>InternalError</Code>")) {
				return "want a 500 InternalError answer"
			}
			return ""
		}},
		{Status503, "PUT", func(r *http.Response, b []byte, err error) string {
			if err != nil || r.StatusCode != 503 || !bytes.Contains(b, []byte("SlowDown")) {
				return "want a 503 SlowDown answer"
			}
			return ""
		}},
		{Reset, "GET", func(r *http.Response, b []byte, err error) string {
			if err == nil {
				return "want a connection error"
			}
			return ""
		}},
		{Truncate, "GET", func(r *http.Response, b []byte, err error) string {
			if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) || len(b) != 2048 {
				return "want half the body then unexpected EOF"
			}
			return ""
		}},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			p, err := NewHTTPProxy(srv.URL, Config{FailRate: 1, Kinds: []Kind{c.kind}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			req, _ := http.NewRequest(c.method, p.URL+"/b/k", strings.NewReader("payload"))
			resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if msg := c.check(resp, body, err); msg != "" {
				t.Fatalf("%s: %s; got err %v, %d body bytes", c.kind, msg, err, len(body))
			}
			if p.Counts()[c.kind] != 1 {
				t.Fatalf("counts %v", p.Counts())
			}
		})
	}
	// A lost response: the backend got the write, the client got an error.
	p, err := NewHTTPProxy(srv.URL, Config{FailRate: 1, Kinds: []Kind{LostResponse}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	before := writes.Load()
	req, _ := http.NewRequest("PUT", p.URL+"/b/k", strings.NewReader("payload"))
	if _, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req); err == nil {
		t.Fatal("lost response: the client got an answer")
	}
	if writes.Load()-before != int64(len("payload")) {
		t.Fatalf("lost response: backend received %d bytes, want the whole write", writes.Load()-before)
	}
}

func TestHTTPProxyRateAndLatency(t *testing.T) {
	srv, _ := backend(t)
	p, err := NewHTTPProxy(srv.URL, Config{FailRate: 0.2, Kinds: []Kind{Status503}, Latency: 2 * time.Millisecond, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 500; i++ {
		resp, err := http.Get(p.URL + "/b/k")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if f := p.Faults(); f < 60 || f > 140 {
		t.Fatalf("%d of 500 requests failed at rate 0.2", f)
	}
	p.Set(Config{})
	before := p.Faults()
	resp, err := http.Get(p.URL + "/b/k")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healed proxy: %v", err)
	}
	resp.Body.Close()
	if p.Faults() != before {
		t.Fatal("healed proxy still injects")
	}
}

func TestTCPProxyCutAndRestore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c) // echo
		}
	}()
	p, err := NewTCPProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	echo := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		b := make([]byte, 4)
		_, err := io.ReadFull(c, b)
		return err
	}
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(c); err != nil {
		t.Fatalf("echo through the proxy: %v", err)
	}
	p.Cut()
	if err := echo(c); err == nil {
		t.Fatal("an open connection survived the cut")
	}
	if c2, err := net.Dial("tcp", p.Addr); err == nil {
		if echo(c2) == nil {
			t.Fatal("a new connection worked while cut")
		}
	}
	p.Restore()
	c3, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(c3); err != nil {
		t.Fatalf("after restore: %v", err)
	}
}
