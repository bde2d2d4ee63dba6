package gossip

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// countingTransport wraps memberlist's own UDP/TCP transport and counts the
// payload bytes that pass through it, so the sidecar can export gossip
// bandwidth. Counts are of gossip payload; IP, UDP and TCP headers are not
// included.
type countingTransport struct {
	inner *memberlist.NetTransport

	sent, recv atomic.Uint64

	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

var _ memberlist.NodeAwareTransport = (*countingTransport)(nil)

func newCountingTransport(inner *memberlist.NetTransport) *countingTransport {
	t := &countingTransport{
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

func (t *countingTransport) forwardPackets() {
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

func (t *countingTransport) forwardStreams() {
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

func (t *countingTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

func (t *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	ts, err := t.inner.WriteTo(b, addr)
	if err == nil {
		t.sent.Add(uint64(len(b)))
	}
	return ts, err
}

func (t *countingTransport) WriteToAddress(b []byte, addr memberlist.Address) (time.Time, error) {
	ts, err := t.inner.WriteToAddress(b, addr)
	if err == nil {
		t.sent.Add(uint64(len(b)))
	}
	return ts, err
}

func (t *countingTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

func (t *countingTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := t.inner.DialTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, t: t}, nil
}

func (t *countingTransport) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	c, err := t.inner.DialAddressTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, t: t}, nil
}

func (t *countingTransport) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown stops the inner transport first: its listeners block on their
// channels, so the forwarders must keep draining them until they are gone.
func (t *countingTransport) Shutdown() error {
	err := t.inner.Shutdown()
	t.stopOnce.Do(func() { close(t.done) })
	t.wg.Wait()
	return err
}

// countingConn counts the bytes of one push/pull or TCP-probe stream.
type countingConn struct {
	net.Conn
	t *countingTransport
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
