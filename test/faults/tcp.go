package faults

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// TCPProxy forwards loopback TCP connections to a backend (e.g. PostgreSQL) and can cut them all:
// while cut, open connections are closed and new ones are closed right after accept, which is
// what a client sees when the server or the network between goes away.
type TCPProxy struct {
	Addr   string // host:port to connect to instead of the backend
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewTCPProxy starts a proxy on 127.0.0.1 in front of target (host:port).
func NewTCPProxy(target string) (*TCPProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the TCP fault proxy: %w", err)
	}
	p := &TCPProxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *TCPProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		b, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, b) {
			continue
		}
		go p.pipe(c, b)
		go p.pipe(b, c)
	}
}

// track registers a connection pair, or closes it when the proxy was cut meanwhile.
func (p *TCPProxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		a.Close()
		b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

func (p *TCPProxy) pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut closes every open connection and refuses new ones until Restore.
func (p *TCPProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore accepts connections again.
func (p *TCPProxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close stops the proxy and closes its connections.
func (p *TCPProxy) Close() error {
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}
