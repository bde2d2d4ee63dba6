package membudget

import (
	"container/list"
	"context"
	"sync"
)

// overtakeShare: tries that overtake a queued acquisition hold at most 1/overtakeShare of the
// budget together.
const overtakeShare = 16

// fifo is a weighted semaphore that grants acquisitions in arrival order, as
// golang.org/x/sync/semaphore does (a large request waiting is not overtaken by a stream of small
// ones), and lets a try take free bytes past queued acquisitions within a bound (try).
type fifo struct {
	mu      sync.Mutex
	size    int64
	cur     int64     // held
	over    int64     // held by tries that overtook a queued acquisition
	waiters list.List // of *fifoWaiter, in arrival order
}

type fifoWaiter struct {
	n     int64
	ready chan struct{} // closed when granted
}

func newFIFO(size int64) *fifo { return &fifo{size: size} }

// acquire waits for n bytes (n <= size), granted in arrival order, or returns ctx's error.
func (s *fifo) acquire(ctx context.Context, n int64) error {
	s.mu.Lock()
	if s.cur+n <= s.size && s.waiters.Len() == 0 {
		s.cur += n
		s.mu.Unlock()
		return nil
	}
	w := &fifoWaiter{n: n, ready: make(chan struct{})}
	el := s.waiters.PushBack(w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		s.cur -= n
	default:
		s.waiters.Remove(el)
	}
	s.notify() // the next waiter may fit now
	return ctx.Err()
}

// try takes n bytes if they are free now, never waiting. With acquisitions queued it takes them
// only when overtake is set and the take stays small: the overtaking tries together hold at most
// 1/overtakeShare of the size, and never so much that the first waiter would not fit beside them.
// A waiter is then delayed by at most that share, and never starved: once the shares granted
// before it come back, the overtakers' bytes leave room for it (and no try overtakes one that
// would not fit). overtook: the take passed a waiter (release must say so).
func (s *fifo) try(n int64, overtake bool) (ok, overtook bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur+n > s.size {
		return false, false
	}
	front := s.waiters.Front()
	if front == nil {
		s.cur += n
		return true, false
	}
	head := front.Value.(*fifoWaiter).n
	if !overtake || s.over+n > s.size/overtakeShare || head+s.over+n > s.size {
		return false, false
	}
	s.cur += n
	s.over += n
	return true, true
}

// release gives n bytes back (overtook: they were taken past a waiter) and grants the waiters
// that now fit, in order.
func (s *fifo) release(n int64, overtook bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur -= n
	if overtook {
		s.over -= n
	}
	if s.cur < 0 || s.over < 0 {
		panic("membudget: released more than held")
	}
	s.notify()
}

// notify grants the waiters at the front that fit; s.mu is held.
func (s *fifo) notify() {
	for {
		front := s.waiters.Front()
		if front == nil {
			return
		}
		w := front.Value.(*fifoWaiter)
		if s.cur+w.n > s.size {
			return
		}
		s.cur += w.n
		s.waiters.Remove(front)
		close(w.ready)
	}
}
