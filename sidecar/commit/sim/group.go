package sim

import "github.com/siglake/siglake/sidecar/lake"

// send hands a pod's request to the committer: queued and acknowledged when one is alive, else
// lost (the pod times out).
func (w *world) send(p *pod) {
	if !w.alive {
		w.timeoutAt(p, w.now+w.answerTimeout())
		return
	}
	w.cpuUs += float64(w.s.Service.CPUPerRequest.Microseconds())
	w.res.Requests++
	p.heard, p.queued = w.now, w.now
	w.queue = append(w.queue, p)
	w.maybeCommit()
}

// answerTimeout is how long a pod waits for an answer after its last ack (3 x interval, the
// committer's wait past one interval, and 2 s).
func (w *world) answerTimeout() int64 {
	return 3*w.s.Interval.Microseconds() + max(w.s.MaxWait-w.s.Interval, 0).Microseconds() + answerTimeoutExtraU
}

// tick is the committer's interval: it commits what is queued once that is due.
func (w *world) tick(epoch int) {
	if epoch != w.epoch || !w.alive {
		return
	}
	if len(w.queue) > 0 && (w.full() || w.s.MaxWait <= w.s.Interval ||
		w.now-w.queue[0].queued+w.s.Interval.Microseconds() > w.s.MaxWait.Microseconds()) {
		w.commitQueued()
	}
	w.at(w.now+w.s.Interval.Microseconds(), func() { w.tick(epoch) })
}

// maybeCommit commits at once when the queue reaches max files (the target bytes wait for the
// next tick: at most one commit an interval however fast the table fills).
func (w *world) maybeCommit() {
	if len(w.queue)*w.s.FilesPerRequest >= w.s.MaxFiles {
		w.commitQueued()
	}
}

// full says whether the queued requests hold max files or the target bytes.
func (w *world) full() bool {
	files, bytes := 0, 0.0
	for _, p := range w.queue {
		files += w.s.FilesPerRequest
		bytes += w.s.BytesPerRequest * float64(len(p.inflight))
	}
	return files >= w.s.MaxFiles || (w.s.TargetBytes > 0 && bytes >= w.s.TargetBytes)
}

// commitQueued starts one group commit of the queue's head, up to max files (at least one
// request), unless one is in flight.
func (w *world) commitQueued() {
	if w.inflight != nil || len(w.queue) == 0 {
		return
	}
	take := max(1, min(len(w.queue), w.s.MaxFiles/w.s.FilesPerRequest))
	a := &attempt{reqs: w.queue[:take:take], files: take * w.s.FilesPerRequest, retry: committerRetry,
		start: w.now, epoch: w.epoch}
	for _, p := range a.reqs {
		a.bytes += w.s.BytesPerRequest * float64(len(p.inflight))
	}
	w.queue = w.queue[take:]
	w.inflight = a
	w.call(a)
}

// failover kills the committer: its queue is lost, and its commit in flight either never reached
// the catalog or landed with its answers lost (a coin toss). Pods waiting on it time out one answer
// timeout after they last heard from it; a new owner starts FailoverGap later.
func (w *world) failover() {
	w.alive = false
	w.epoch++
	lost := w.queue
	if a := w.inflight; a != nil {
		lost = append(lost, a.reqs...)
		if w.r.IntN(2) == 0 {
			w.landUnanswered(a)
		}
	}
	for _, p := range lost {
		w.timeoutAt(p, max(w.now, p.heard+w.answerTimeout()))
	}
	w.queue, w.inflight = nil, nil
	w.at(w.now+w.s.FailoverGap.Microseconds(), func() {
		w.alive = true
		epoch := w.epoch
		w.at(w.now+w.s.Interval.Microseconds(), func() { w.tick(epoch) })
	})
}

// timeoutAt schedules a pod's answer timeout for its current request.
func (w *world) timeoutAt(p *pod, at int64) {
	req := p.req
	w.at(at, func() { w.timeout(p, req) })
}

// timeout: no answer. The pod re-reads its mark: a mark covering the batch (the lost commit
// landed) ends the request already committed; else it resends, or commits directly once it heard
// nothing for the fallback bound.
func (w *world) timeout(p *pod, req int) {
	if p.req != req {
		return // answered meanwhile
	}
	w.res.metadataRead += w.t.metadataBytes()
	if p.covered {
		w.res.AlreadyCommitted++
		p.covered = false
		w.answered(p)
		return
	}
	if w.now-p.heard > w.s.FallbackAfter.Microseconds() {
		w.call(&attempt{pod: p, files: w.s.FilesPerRequest, retry: lake.DefaultRetry, start: w.now, direct: true,
			bytes: w.s.BytesPerRequest * float64(len(p.inflight))})
		return
	}
	w.send(p)
}

// landUnanswered lands a group commit whose answers are lost: the pods learn it from their marks.
func (w *world) landUnanswered(a *attempt) {
	ids := make([]int, len(a.reqs))
	for i, p := range a.reqs {
		ids[i] = p.id
		p.covered = true
	}
	w.t.append(ids, true)
	w.res.Commits++
	w.res.committedBytes += a.bytes
	w.res.metadataObjects += metadataObjects
}
