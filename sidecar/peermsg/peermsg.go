// Package peermsg is messages between sidecars: the interface gossip.Cluster satisfies (reliable
// user messages, authenticated by the gossip key), and an in-process hub for tests and for an
// owner talking to itself. Group commit and bin leases send over it; it knows neither.
package peermsg

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Transport carries messages between members: the gossip cluster in the process (its reliable
// user messages, authenticated by the gossip key), LocalTransport in tests and in-process pods.
type Transport interface {
	// Name is this member's name: answers come back to it.
	Name() string
	// Send delivers msg to member; an error means it may or may not have arrived.
	Send(member string, msg []byte) error
	// Handle routes received messages whose first byte is kind to f, which must not block.
	Handle(kind byte, f func(from string, msg []byte))
}

// ErrNoMember is LocalTransport's Send to a name that has no member on the hub.
var ErrNoMember = errors.New("no such member on the local hub")

// ErrRefused wraps a Send error whose message surely did not reach a handler and will not on a
// resend: the receiver refused it (another key, another address, no key to verify with). A
// sender stops waiting for an answer then, rather than resending until its timeouts pass.
var ErrRefused = errors.New("refused by the receiver")

// LocalHub connects LocalTransports in one process: the tests' cluster, in-process pods, and an
// owner handing off to itself. It delivers as memberlist does: each message is a copy, handed to
// the receiver's handler on a goroutine of its own, so a sender never waits for a handler and
// messages may arrive in any order.
type LocalHub struct {
	mu      sync.Mutex
	members map[string]*LocalTransport
	filter  func(LocalMessage) Fate
	held    []LocalMessage
	sent    map[byte]int
	wg      sync.WaitGroup
}

// LocalMessage is one message on its way, as the hub's filter sees it.
type LocalMessage struct {
	From, To string
	Msg      []byte // Msg[0] is the kind
}

// Kind is the message's kind byte.
func (m LocalMessage) Kind() byte { return m.Msg[0] }

// Fate is what the hub's filter decides for one message.
type Fate struct {
	Drop  bool          // lost on the way (Send still returns nil, as a lost stream would)
	Hold  bool          // kept until Release
	Delay time.Duration // delivered this much later
	// Refuse: the receiver refuses it (another key or address): Send returns ErrRefused.
	Refuse bool
}

// NewLocalHub returns a hub without members.
func NewLocalHub() *LocalHub {
	return &LocalHub{members: map[string]*LocalTransport{}, sent: map[byte]int{}}
}

// Member returns the transport of the member called name, joining it on first use.
func (h *LocalHub) Member(name string) *LocalTransport {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m, ok := h.members[name]; ok {
		return m
	}
	m := &LocalTransport{hub: h, name: name, handlers: map[byte]func(string, []byte){}}
	h.members[name] = m
	return m
}

// SetFilter decides the fate of every message sent from now on (nil: all are delivered at once).
// It runs in Send, so it must not block.
func (h *LocalHub) SetFilter(f func(LocalMessage) Fate) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.filter = f
}

// Release delivers the held messages and returns how many there were.
func (h *LocalHub) Release() int {
	h.mu.Lock()
	held := h.held
	h.held = nil
	h.mu.Unlock()
	for _, m := range held {
		h.deliver(m, 0)
	}
	return len(held)
}

// Sent counts the messages of kind sent so far (dropped and held ones included).
func (h *LocalHub) Sent(kind byte) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sent[kind]
}

// Wait returns when every message sent so far that is not held has been handled.
func (h *LocalHub) Wait() { h.wg.Wait() }

func (h *LocalHub) send(m LocalMessage) error {
	h.mu.Lock()
	_, ok := h.members[m.To]
	h.sent[m.Kind()]++
	if !ok {
		h.mu.Unlock()
		return fmt.Errorf("send to %q: %w", m.To, ErrNoMember)
	}
	var fate Fate
	if h.filter != nil {
		fate = h.filter(m)
	}
	if fate.Refuse {
		h.mu.Unlock()
		return fmt.Errorf("send to %q: %w", m.To, ErrRefused)
	}
	if fate.Hold && !fate.Drop {
		h.held = append(h.held, m)
	}
	h.mu.Unlock()
	if !fate.Drop && !fate.Hold {
		h.deliver(m, fate.Delay)
	}
	return nil
}

// deliver hands m to its receiver's handler after delay, on a goroutine of its own.
func (h *LocalHub) deliver(m LocalMessage, delay time.Duration) {
	h.mu.Lock()
	to := h.members[m.To] // members never leave
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if delay > 0 {
			time.Sleep(delay)
		}
		to.mu.RLock()
		f := to.handlers[m.Kind()]
		to.mu.RUnlock()
		if f != nil { // no handler for the kind: dropped, as gossip's router drops it
			f(m.From, m.Msg)
		}
	}()
}

// LocalTransport is one member of a LocalHub: a Transport without a network.
type LocalTransport struct {
	hub      *LocalHub
	name     string
	mu       sync.RWMutex
	handlers map[byte]func(from string, msg []byte)
}

// Name is the member's name.
func (t *LocalTransport) Name() string { return t.name }

// Send delivers a copy of msg to member asynchronously; it fails only for a member the hub does
// not know.
func (t *LocalTransport) Send(member string, msg []byte) error {
	if len(msg) == 0 {
		return errors.New("empty message: the first byte is its kind")
	}
	return t.hub.send(LocalMessage{From: t.name, To: member, Msg: append([]byte(nil), msg...)})
}

// Handle routes received messages of kind to f.
func (t *LocalTransport) Handle(kind byte, f func(from string, msg []byte)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.handlers[kind] = f
}

// Handles reports whether messages of kind have a handler yet: a test waits for a receiver's
// Run to register it before sending.
func (t *LocalTransport) Handles(kind byte) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.handlers[kind] != nil
}

// Loopback wraps tr so that messages to this member's own name stay in the process: a member that
// is its own table's owner (group commit, bin leases) talks to itself. They are delivered as every other message is (a
// copy, on a goroutine of its own), through a LocalHub of one member.
func Loopback(tr Transport) Transport {
	return &loopback{Transport: tr, self: NewLocalHub().Member(tr.Name())}
}

type loopback struct {
	Transport
	self *LocalTransport
}

func (l *loopback) Send(member string, msg []byte) error {
	if member == l.Name() {
		return l.self.Send(member, msg)
	}
	return l.Transport.Send(member, msg)
}

func (l *loopback) Handle(kind byte, f func(from string, msg []byte)) {
	l.self.Handle(kind, f)
	l.Transport.Handle(kind, f)
}
