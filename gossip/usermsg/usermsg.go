// Package usermsg carries messages between members of the gossip cluster:
// memberlist's user messages, sent over its reliable stream and wrapped in a
// small envelope that names the sender, and a router that hands each one to
// the handler registered for its kind. docs/gossip.md "User messages".
package usermsg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/memberlist"
)

// MaxBytes is the largest message Send takes. memberlist refuses a user
// message of more than 20 MiB, and an encrypted stream of more than 20 MiB,
// on the receiving side; 16 MiB leaves room for the envelope, memberlist's
// header and the encryption, so a message Send takes is never dropped there.
const MaxBytes = 16 << 20

// envelopeVersion is the second byte of every message; a receiver drops
// (and counts as malformed) a version it does not know.
const envelopeVersion = 1

// ErrNoMember is returned by Send for a name that is not an alive member.
var ErrNoMember = errors.New("not an alive gossip member")

// Handler receives one message: msg is a copy of the bytes the sender passed
// to Send (msg[0] is the kind) that the handler may keep. It runs on
// memberlist's goroutine for the stream, so it must not block: decode,
// enqueue, return.
//
// from is the member name the sender put in the envelope: memberlist does
// not tell the receiver who sent a message, so Send names the sender. With
// a keyring and no key migration (Cluster.Authenticated) only holders of
// the cluster's key reach NotifyMsg at all, so from is one keyed member's
// claim, as trustworthy as membership itself (a keyed process can claim
// any name there too); answers sent to from reach that member. Without a
// key anyone who reaches the port can send anything under any name: act
// on messages only when Authenticated.
type Handler func(from string, msg []byte)

// Encode wraps msg (msg[0] is its kind) in the envelope: the kind, the
// envelope version, the sender's name (uvarint length, bytes), then the rest
// of msg. The kind stays the first byte on the wire.
func Encode(from string, msg []byte) ([]byte, error) {
	if len(msg) == 0 {
		return nil, errors.New("empty user message: the first byte is its kind")
	}
	if from == "" {
		return nil, errors.New("user message without a sender name")
	}
	b := make([]byte, 0, 2+binary.MaxVarintLen64+len(from)+len(msg)-1)
	b = append(b, msg[0], envelopeVersion)
	b = binary.AppendUvarint(b, uint64(len(from)))
	b = append(b, from...)
	b = append(b, msg[1:]...)
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("user message of %d bytes: at most %d", len(b), MaxBytes)
	}
	return b, nil
}

// Decode unwraps a message Encode made, copying it (memberlist reuses wire).
func Decode(wire []byte) (from string, msg []byte, err error) {
	if len(wire) < 2 {
		return "", nil, errors.New("user message shorter than its envelope")
	}
	if wire[1] != envelopeVersion {
		return "", nil, fmt.Errorf("user message envelope version %d, this process reads %d", wire[1], envelopeVersion)
	}
	n, k := binary.Uvarint(wire[2:])
	if k <= 0 || n == 0 || n > uint64(len(wire)-2-k) {
		return "", nil, errors.New("user message with a bad sender name length")
	}
	rest := wire[2+k:]
	from = string(rest[:n])
	msg = make([]byte, 1+len(rest)-int(n))
	msg[0] = wire[0]
	copy(msg[1:], rest[n:])
	return from, msg, nil
}

// Send delivers msg to the alive member named to, over one TCP stream of
// its own (memberlist SendReliable: encrypted and labelled like all gossip,
// bounded by memberlist's TCPTimeout). from is this member's name.
func Send(ml *memberlist.Memberlist, from, to string, msg []byte) error {
	wire, err := Encode(from, msg)
	if err != nil {
		return err
	}
	for _, n := range ml.Members() {
		if n.Name == to {
			if err := ml.SendReliable(n, wire); err != nil {
				return fmt.Errorf("user message to gossip member %q: %w", to, err)
			}
			return nil
		}
	}
	return fmt.Errorf("user message to %q: %w", to, ErrNoMember)
}

// Stats count received messages, and those dropped undelivered.
type Stats struct {
	// Received are messages handed to a handler.
	Received uint64 `json:"received"`
	// UnknownKind are messages of a kind no handler is registered for (a
	// newer peer's, or one that arrived before the handler was registered).
	UnknownKind uint64 `json:"unknown_kind"`
	// Malformed are messages without a readable envelope.
	Malformed uint64 `json:"malformed"`
}

// Router hands each received message to the handler of its kind. The zero
// value is ready to use; it is safe for concurrent use.
type Router struct {
	mu       sync.RWMutex
	handlers map[byte]Handler

	received, unknown, malformed atomic.Uint64
}

// Handle registers f for messages of kind, replacing an earlier one.
func (r *Router) Handle(kind byte, f Handler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handlers == nil {
		r.handlers = map[byte]Handler{}
	}
	r.handlers[kind] = f
}

// Deliver is memberlist's NotifyMsg: it decodes wire (copying it) and calls
// the handler of its kind, or counts the message dropped.
func (r *Router) Deliver(wire []byte) {
	from, msg, err := Decode(wire)
	if err != nil {
		r.malformed.Add(1)
		return
	}
	r.mu.RLock()
	f := r.handlers[msg[0]]
	r.mu.RUnlock()
	if f == nil {
		r.unknown.Add(1)
		return
	}
	r.received.Add(1)
	f(from, msg)
}

// Stats returns the counters.
func (r *Router) Stats() Stats {
	return Stats{Received: r.received.Load(), UnknownKind: r.unknown.Load(), Malformed: r.malformed.Load()}
}
