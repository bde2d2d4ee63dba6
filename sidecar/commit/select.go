package commit

import "time"

// SelectConfig bounds one group commit.
type SelectConfig struct {
	// MaxAge is the oldest request a commit may start on, by receive age and by the pod's
	// WrittenMs (lake.HandoffMaxAge): every landing then stays inside orphan gc's floor, even for
	// a committer resumed after a pause (the monotonic clock runs during SIGSTOP).
	MaxAge time.Duration
	// MaxFiles is the most files one commit takes once it holds a request
	// (group-commit-max-files); a single larger request still goes alone.
	MaxFiles int
}

// Selection is what Select made of a queue: every request is in exactly one list, each in
// arrival order.
type Selection struct {
	Selected []Queued // commit these together now
	Deferred []Queued // keep at the queue's head for the next commit
	Expired  []Queued // answer expired and remove: the pod commits directly
}

// Select picks the requests of one table's queue (arrival order) that the next group commit
// takes, at time now (the caller's clock: monotonic reading for receive age, wall clock against
// WrittenMs):
//
//  1. older than cfg.MaxAge since received or since written -> expired;
//  2. a stream already met in this queue (selected or deferred) -> deferred: one mark per
//     stream per commit, and a stream's requests are never reordered; the marks decide next time;
//  3. more than cfg.MaxFiles files in all once a request is selected -> deferred;
//  4. else selected.
//
// Marks are not read here: the commit reads them on every attempt.
func Select(queue []Queued, now time.Time, cfg SelectConfig) Selection {
	var s Selection
	met := map[string]bool{}
	files := 0
	for _, q := range queue {
		switch {
		case q.TooOld(now, cfg.MaxAge):
			s.Expired = append(s.Expired, q)
		case met[q.Request.Stream]:
			s.Deferred = append(s.Deferred, q)
		case len(s.Selected) > 0 && files+q.Files() > cfg.MaxFiles:
			met[q.Request.Stream] = true
			s.Deferred = append(s.Deferred, q)
		default:
			met[q.Request.Stream] = true
			files += q.Files()
			s.Selected = append(s.Selected, q)
		}
	}
	return s
}

// TooOld reports whether a commit may no longer start on q at now: older than maxAge since it was
// received (monotonic: a pause counts) or since its files were written (the pod's wall clock).
func (q Queued) TooOld(now time.Time, maxAge time.Duration) bool {
	return now.Sub(q.Received) > maxAge || now.UnixMilli()-q.Request.WrittenMs > maxAge.Milliseconds()
}
