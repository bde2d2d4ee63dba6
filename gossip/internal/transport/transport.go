// Package transport is the gossip's network transport: memberlist's own
// UDP/TCP transport, bound with retries, wrapped to count the payload bytes
// that pass through it.
package transport

import (
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Counting wraps memberlist's own UDP/TCP transport and counts the
// payload bytes that pass through it, so the sidecar can export gossip
// bandwidth. Counts are of gossip payload; IP, UDP and TCP headers are not
// included.
type Counting struct {
	inner *memberlist.NetTransport

	sent, recv atomic.Uint64

	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

var _ memberlist.NodeAwareTransport = (*Counting)(nil)

func NewCounting(inner *memberlist.NetTransport) *Counting {
	t := &Counting{
		inner:    inner,
		packetCh: make(chan *memberlist.Packet),
		streamCh: make(chan net.Conn),
		done:     make(chan struct{}),
	}
	t.wg.Add(2)
	go t.forwardPackets()
	go t.forwardStreams()
	return t
}

func (t *Counting) forwardPackets() {
	defer t.wg.Done()
	in := t.inner.PacketCh()
	for {
		select {
		case p := <-in:
			t.recv.Add(uint64(len(p.Buf)))
			select {
			case t.packetCh <- p:
			case <-t.done:
				return
			}
		case <-t.done:
			return
		}
	}
}

func (t *Counting) forwardStreams() {
	defer t.wg.Done()
	in := t.inner.StreamCh()
	for {
		select {
		case c := <-in:
			select {
			case t.streamCh <- &countingConn{Conn: c, t: t}:
			case <-t.done:
				_ = c.Close()
				return
			}
		case <-t.done:
			return
		}
	}
}

func (t *Counting) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

func (t *Counting) WriteTo(b []byte, addr string) (time.Time, error) {
	ts, err := t.inner.WriteTo(b, addr)
	if err == nil {
		t.sent.Add(uint64(len(b)))
	}
	return ts, err
}

func (t *Counting) WriteToAddress(b []byte, addr memberlist.Address) (time.Time, error) {
	ts, err := t.inner.WriteToAddress(b, addr)
	if err == nil {
		t.sent.Add(uint64(len(b)))
	}
	return ts, err
}

func (t *Counting) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

func (t *Counting) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := t.inner.DialTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, t: t}, nil
}

func (t *Counting) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	c, err := t.inner.DialAddressTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, t: t}, nil
}

func (t *Counting) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown stops the inner transport first: its listeners block on their
// channels, so the forwarders must keep draining them until they are gone.
func (t *Counting) Shutdown() error {
	err := t.inner.Shutdown()
	t.stopOnce.Do(func() { close(t.done) })
	t.wg.Wait()
	return err
}

// countingConn counts the bytes of one push/pull or TCP-probe stream.
type countingConn struct {
	net.Conn
	t *Counting
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.t.recv.Add(uint64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.t.sent.Add(uint64(n))
	return n, err
}

// Sent is the payload bytes sent so far.
func (t *Counting) Sent() uint64 { return t.sent.Load() }

// Received is the payload bytes received so far.
func (t *Counting) Received() uint64 { return t.recv.Load() }

// Bind binds memberlist's UDP+TCP transport. A dynamic port (0)
// is bound for TCP and then for UDP, which another process can take in
// between, so that case is retried like memberlist itself does.
func Bind(addr string, port int, log *log.Logger) (*memberlist.NetTransport, error) {
	tries := 1
	if port == 0 {
		tries = 10
	}
	var err error
	for range tries {
		var nt *memberlist.NetTransport
		nt, err = memberlist.NewNetTransport(&memberlist.NetTransportConfig{
			BindAddrs: []string{addr},
			BindPort:  port,
			Logger:    log,
		})
		if err == nil {
			return nt, nil
		}
	}
	return nil, err
}
