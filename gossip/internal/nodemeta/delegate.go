package nodemeta

import "sync"

// Delegate is memberlist's hook into this member: it serves the member's
// current metadata and passes user messages to Msg; the other hooks
// (broadcasts, state exchange) are unused.
type Delegate struct {
	// Msg receives each user message; memberlist reuses the slice after it
	// returns, and blocks the stream (or the UDP receive loop) until then.
	Msg func([]byte)

	mu   sync.Mutex
	meta []byte
}

// Set replaces the metadata gossiped from the next update on.
func (d *Delegate) Set(b []byte) {
	d.mu.Lock()
	d.meta = b
	d.mu.Unlock()
}

func (d *Delegate) NodeMeta(limit int) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta
}

func (d *Delegate) NotifyMsg(b []byte)                         { d.Msg(b) }
func (d *Delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *Delegate) LocalState(join bool) []byte                { return nil }
func (d *Delegate) MergeRemoteState(buf []byte, join bool)     {}
