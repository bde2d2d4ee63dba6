package sim

import (
	"container/heap"
	"math/rand/v2"
	"time"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/backoff"
)

// drainBackoff is the drain's per-table delay after a batch exhausted its commit attempts
// (sidecar/drain: 1 s doubling to 32 s).
var drainBackoff = backoff.Policy{Min: 1e9, Max: 32e9, Factor: 2, Jitter: backoff.NoJitter}

// maxContended caps the attempts whose contention PerInFlight counts: it is fitted to 16
// concurrent writers and is not extrapolated beyond them.
const maxContended = 16

// batchesLimit ends a Batches run whose batches did not all land.
const batchesLimit = 24 * time.Hour

// committerRetry is the committer's retry of one group commit (docs/design/group-commit.md 2.2).
var committerRetry = lake.Retry{Attempts: 4, MinWait: 50e6, MaxWait: 1e9}

// Times are microseconds of virtual time.
type event struct {
	at, seq int64
	do      func()
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	return e[i].at < e[j].at || e[i].at == e[j].at && e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// pod is one ingest pod and its stream.
type pod struct {
	id       int
	ready    []int64 // due times of batches not yet in a commit
	inflight []int64 // due times of the batch being committed (or handed off)
	busy     bool
	round    int   // batches failed in a row (the drain's backoff)
	wait     int64 // no new commit before (the drain's backoff)
	// group mode
	req      int   // id of the outstanding request, 0 for none
	heard    int64 // last message from a committer about it
	queued   int64 // when its request was queued at the committer
	loadedAt int64 // the pod's table cache
	covered  bool  // its request landed but the answer was lost: its mark covers the batch
}

// attempt is one commit call in flight: a pod's direct commit or a group commit.
type attempt struct {
	pod    *pod   // direct
	reqs   []*pod // group: the pods whose requests it carries
	files  int
	retry  lake.Retry
	n      int   // attempts so far in this call
	head   int64 // the head the attempt loaded
	start  int64 // the call's start
	epoch  int   // group: the committer that made it
	bytes  float64
	direct bool
}

type world struct {
	s     Scenario
	r     *rand.Rand
	q     events
	seq   int64
	now   int64
	t     table
	res   Result
	lags  []float64
	calls []float64
	pods  []*pod
	// committer
	alive    bool
	epoch    int
	queue    []*pod
	inflight *attempt
	reqSeq   int
	cpuUs    float64
	active   int // attempts in flight: they share the catalog and the object store
	done     int // commits answered to pods (one batch each in Batches mode)
}

func (w *world) at(t int64, f func()) {
	w.seq++
	heap.Push(&w.q, event{at: t, seq: w.seq, do: f})
}

// Run simulates one scenario.
func Run(s Scenario) Result {
	w := &world{s: s, r: rand.New(rand.NewPCG(s.Seed, 0x33)), alive: true, t: table{streams: map[int]bool{}, merge: s.MergeMinCount}}
	w.res = Result{Scenario: s.Name, Mode: s.Mode, Pods: s.Pods}
	end := s.Duration.Microseconds()
	if s.Batches > 0 {
		end = batchesLimit.Microseconds() // a bound, should the batches never all land
	}
	for i := range s.Pods {
		p := &pod{id: i}
		w.pods = append(w.pods, p)
		if s.Batches > 0 {
			p.ready = make([]int64, s.Batches) // all due at 0
			w.res.Batches += s.Batches
			w.at(0, func() { w.tryStart(p) })
			continue
		}
		period := 1e6 / s.RequestsPerPodPerSec
		w.at(int64(w.r.Float64()*period), func() { w.due(p, int64(period)) })
	}
	if s.Mode == Group {
		w.at(s.Interval.Microseconds(), func() { w.tick(0) })
	}
	if s.MaintenanceCommitsPerSec > 0 {
		w.at(w.exp(s.MaintenanceCommitsPerSec), w.maintenance)
	}
	if s.Mode == Group && s.FailoverAt > 0 {
		w.at(s.FailoverAt.Microseconds(), w.failover)
	}
	for w.q.Len() > 0 {
		e := heap.Pop(&w.q).(event)
		if e.at > end || s.Batches > 0 && w.done == s.Pods*s.Batches {
			break
		}
		w.now = e.at
		e.do()
	}
	if s.Batches > 0 {
		end = w.now
	}
	// Batches not visible at the end count with their age then: a lower bound of their lag, so
	// a saturated table's lag is not taken from the few batches it did commit.
	for _, p := range w.pods {
		for _, d := range append(p.inflight, p.ready...) {
			w.lags = append(w.lags, float64(end-d)/1e6)
			w.res.Waiting++
		}
	}
	return w.result(end)
}

// exp is a Poisson process's next arrival at rate per second, from now.
func (w *world) exp(rate float64) int64 { return w.now + int64(w.r.ExpFloat64()/rate*1e6) }

func (w *world) maintenance() {
	w.t.maintain()
	w.res.MaintenanceCommits++
	w.at(w.exp(w.s.MaintenanceCommitsPerSec), w.maintenance)
}

// due: a pod's next batch came due.
func (w *world) due(p *pod, period int64) {
	p.ready = append(p.ready, w.now)
	w.res.Batches++
	w.at(w.now+period, func() { w.due(p, period) })
	w.tryStart(p)
}

// tryStart starts a pod's next batch: it writes the files, then commits or hands them off. A
// rate-mode pod takes every batch that came due (the drain takes all sealed segments); Batches
// mode takes one.
func (w *world) tryStart(p *pod) {
	if p.busy || len(p.ready) == 0 || w.now < p.wait {
		return
	}
	p.busy = true
	take := len(p.ready)
	if w.s.Batches > 0 {
		take = 1
	}
	p.inflight, p.ready = append(p.inflight[:0], p.ready[:take]...), p.ready[take:]
	w.at(w.now+w.s.Service.Write.Microseconds(), func() { w.written(p) })
}

// written: the pod's files are written; a direct pod loads the table (cached for a minute when
// grouped) and commits, a grouped one sends its request.
func (w *world) written(p *pod) {
	if w.s.Mode == Direct {
		w.res.metadataRead += w.t.metadataJSONBytes()
		w.call(&attempt{pod: p, files: w.s.FilesPerRequest, retry: lake.DefaultRetry, start: w.now, direct: true,
			bytes: w.s.BytesPerRequest * float64(len(p.inflight))})
		return
	}
	if w.now-p.loadedAt > tableCacheUs || p.loadedAt == 0 {
		w.res.metadataRead += w.t.metadataJSONBytes()
		p.loadedAt = w.now
	}
	w.reqSeq++
	p.req, p.heard = w.reqSeq, w.now
	w.send(p)
}

// call starts a commit call's first attempt.
func (w *world) call(a *attempt) {
	a.n = 0
	w.attempt(a)
}

// attempt loads the table and commits after the service time.
func (w *world) attempt(a *attempt) {
	a.n++
	a.head = w.t.head
	w.res.metadataRead += w.t.metadataBytes()
	w.res.Attempts++
	sv := w.s.Service
	d := float64(sv.Base+sv.PerFile*time.Duration(a.files)+sv.PerInFlight*time.Duration(min(w.active, maxContended))) +
		float64(sv.PerPropertyKB)*w.t.propertyBytes()/1024
	if w.t.merging() {
		d += float64(sv.PerManifestRead) * float64(w.t.manifests)
	}
	d *= 1 - sv.Spread + 2*sv.Spread*w.r.Float64()
	w.active++
	w.at(w.now+int64(d/1e3), func() { w.active--; w.finish(a) })
}

// finish ends an attempt: it lands when the head did not move since its load, else conflicts.
func (w *world) finish(a *attempt) {
	if !a.direct && (a.epoch != w.epoch || !w.alive) {
		return // the committer died: this commit never reached the catalog
	}
	w.res.metadataObjects += metadataObjects
	if w.t.head == a.head {
		w.land(a)
		return
	}
	w.res.Conflicts++
	if a.n < a.retry.Attempts {
		wait := a.retry.Backoff().Wait(a.n, w.r.Int64N)
		w.at(w.now+wait.Microseconds(), func() { w.attempt(a) })
		return
	}
	w.failed(a)
}

// land applies a commit and answers its batches.
func (w *world) land(a *attempt) {
	w.res.Commits++
	w.res.committedBytes += a.bytes
	if a.direct {
		w.t.append([]int{a.pod.id}, false)
		w.calls = append(w.calls, float64(w.now-a.start)/1e6)
		w.res.Calls++
		if a.pod.req != 0 {
			w.res.Fallbacks++
		}
		w.answered(a.pod)
		return
	}
	ids := make([]int, len(a.reqs))
	for i, p := range a.reqs {
		ids[i] = p.id
	}
	w.t.append(ids, true)
	w.cpuUs += float64(w.s.Service.CPUPerCommit.Microseconds())
	w.inflight = nil
	for _, p := range a.reqs {
		w.answered(p)
	}
	w.maybeCommit()
}

// answered: a pod's batch is committed (visible): its lags, then its next batch.
func (w *world) answered(p *pod) {
	for _, d := range p.inflight {
		w.lags = append(w.lags, float64(w.now-d)/1e6)
	}
	w.res.Visible += len(p.inflight)
	w.done++
	p.inflight, p.busy, p.round, p.req = p.inflight[:0], false, 0, 0
	w.tryStart(p)
}

// failed: a call exhausted its attempts. A direct batch goes back to the WAL and waits the
// drain's per-table backoff (then is written again); a group commit's requests are answered
// failed, and the pods resend them (modelled as requeued at the head).
func (w *world) failed(a *attempt) {
	if a.direct {
		p := a.pod
		w.calls = append(w.calls, float64(w.now-a.start)/1e6)
		w.res.Calls++
		w.res.FailedCalls++
		p.ready = append(append([]int64{}, p.inflight...), p.ready...)
		p.inflight, p.busy, p.req = p.inflight[:0], false, 0
		p.round++
		p.wait = w.now + drainBackoff.Wait(p.round, nil).Microseconds()
		w.at(p.wait, func() { w.tryStart(p) })
		return
	}
	w.res.GroupFailed++
	w.inflight = nil
	w.queue = append(append([]*pod{}, a.reqs...), w.queue...)
}
