package peermsg

import (
	"sync"
	"time"
)

// Outbox sends messages for a receiver's handlers, which must not block: Post queues without
// waiting, and each member has a sender goroutine of its own, since a Send blocks until the
// member read it (up to memberlist's TCP timeout, 10 s, for a member that died but is still
// alive in gossip) and one slow member must not hold every other's messages. It is group
// commit's answer sender, and the lease owner's.
type Outbox struct {
	tr      Transport
	dropped func() // told of every message not sent; nil: nobody
	in      chan outgoing
	perTo   int
	idle    time.Duration
}

type outgoing struct {
	to  string
	msg []byte
}

// NewOutbox returns an outbox sending on tr, holding at most queue messages for its dispatcher
// and perMember for each member; beyond them Post drops. dropped (nil: none) is told of every
// message dropped or whose Send failed.
func NewOutbox(tr Transport, queue, perMember int, dropped func()) *Outbox {
	if dropped == nil {
		dropped = func() {}
	}
	return &Outbox{tr: tr, dropped: dropped, in: make(chan outgoing, queue), perTo: perMember, idle: time.Minute}
}

// Post queues msg for member to without waiting: a full queue drops it.
func (o *Outbox) Post(to string, msg []byte) {
	select {
	case o.in <- outgoing{to: to, msg: msg}:
	default:
		o.dropped()
	}
}

// Run sends until stop is closed, then sends what is queued and returns.
func (o *Outbox) Run(stop <-chan struct{}) {
	boxes := map[string]chan []byte{}
	idle := make(chan string)
	var wg sync.WaitGroup
	post := func(m outgoing) {
		box, ok := boxes[m.to]
		if !ok {
			box = make(chan []byte, o.perTo)
			boxes[m.to] = box
			wg.Add(1)
			go func() { defer wg.Done(); o.sendTo(m.to, box, idle) }()
		}
		select {
		case box <- m.msg:
		default:
			o.dropped()
		}
	}
	for {
		select {
		case m := <-o.in:
			post(m)
		case to := <-idle:
			if box := boxes[to]; box != nil && len(box) == 0 {
				close(box) // its sender returns; a later message starts another
				delete(boxes, to)
			}
		case <-stop:
			for drained := false; !drained; {
				select {
				case m := <-o.in:
					post(m)
				default:
					drained = true
				}
			}
			for _, box := range boxes {
				close(box)
			}
			wg.Wait()
			return
		}
	}
}

// sendTo sends box's messages to member to, in order, until box is closed; after the idle time
// without one it offers to end (the dispatcher closes box if nothing came meanwhile).
func (o *Outbox) sendTo(to string, box <-chan []byte, idle chan<- string) {
	t := time.NewTimer(o.idle)
	defer t.Stop()
	send := func(msg []byte) {
		if err := o.tr.Send(to, msg); err != nil {
			o.dropped()
		}
		t.Reset(o.idle)
	}
	for {
		select {
		case msg, ok := <-box:
			if !ok {
				return
			}
			send(msg)
		case <-t.C:
			select {
			case idle <- to:
				t.Reset(o.idle)
			case msg, ok := <-box:
				if !ok {
					return
				}
				send(msg)
			}
		}
	}
}
