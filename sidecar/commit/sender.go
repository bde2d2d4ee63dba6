package commit

import (
	"sync"
	"time"
)

// memberAnswers bounds the answers waiting for one member; beyond it they are dropped (the pod
// times out and re-reads its mark).
const memberAnswers = 256

// senderIdle is how long a member's sender lives without answers to send.
const senderIdle = time.Minute

// sender hands each answer to its member's own sender goroutine: a send blocks until the member
// read it (up to memberlist's TCP timeout, 10 s, for a member that died but is still alive in
// gossip), and one slow member must not hold every other pod's answers. After stop it sends
// what is buffered and returns.
func (c *Committer) sender(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	boxes := map[string]chan []byte{}
	idle := make(chan string)
	var wg sync.WaitGroup
	post := func(o outgoing) {
		box, ok := boxes[o.to]
		if !ok {
			box = make(chan []byte, memberAnswers)
			boxes[o.to] = box
			wg.Add(1)
			go func() { defer wg.Done(); c.sendTo(o.to, box, idle) }()
		}
		select {
		case box <- o.msg:
		default:
			c.cfg.Observer.AnswerDropped()
		}
	}
	for {
		select {
		case o := <-c.out:
			post(o)
		case to := <-idle:
			if box := boxes[to]; box != nil && len(box) == 0 {
				close(box) // its sender returns; a later answer starts another
				delete(boxes, to)
			}
		case <-stop:
			for {
				select {
				case o := <-c.out:
					post(o)
					continue
				default:
				}
				break
			}
			for _, box := range boxes {
				close(box)
			}
			wg.Wait()
			return
		}
	}
}

// sendTo sends the answers of box to member to, in order, until box is closed; after senderIdle
// without one it offers to end (the dispatcher closes box if nothing came meanwhile).
func (c *Committer) sendTo(to string, box <-chan []byte, idle chan<- string) {
	t := time.NewTimer(senderIdle)
	defer t.Stop()
	for {
		select {
		case msg, ok := <-box:
			if !ok {
				return
			}
			if err := c.tr.Send(to, msg); err != nil {
				c.cfg.Observer.AnswerDropped()
			}
			t.Reset(senderIdle)
		case <-t.C:
			select {
			case idle <- to:
			case msg, ok := <-box:
				if !ok {
					return
				}
				if err := c.tr.Send(to, msg); err != nil {
					c.cfg.Observer.AnswerDropped()
				}
			}
			t.Reset(senderIdle)
		}
	}
}
