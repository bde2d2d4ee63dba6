package commit

import (
	"context"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/drain/handoff"
	"github.com/siglake/siglake/sidecar/lake"
)

// A prewritten run takes the pods' Parquet encoding out of the window, so that the process's
// CPU in it is the committer's and the hand-offs' (the committer's CPU at 100 requests/s, which
// a thousand pods encoding in one process on a shared machine cannot offer): before the window
// each pod's real drain writes its batches, one sealed segment each, to a captor that keeps
// them instead of committing them; in the window each pod hands its batches to the committer
// through its client at the times it would have sealed them. Lag is from that hand-off to its
// answer: the encoding a drain does after a seal is not in it.

// captured is one batch a drain handed to a captor.
type captured struct {
	t     *table.Table
	req   lake.AppendRequest
	epoch uint64
	at    handoff.Progress
}

// captor is a drain's GroupCommitter that keeps every batch and answers committed, so the drain
// removes the batch's segments and writes the next batch from the segments after them.
type captor struct{ batches []captured }

func (c *captor) Commit(_ context.Context, t *table.Table, req lake.AppendRequest, epoch uint64, at handoff.Progress) (lake.CommitResult, bool, error) {
	c.batches = append(c.batches, captured{t: t, req: req, epoch: epoch, at: at})
	return lake.CommitResult{Outcome: lake.Committed}, false, nil
}
func (c *captor) Heartbeat(string, string, time.Time, time.Time) {}
func (c *captor) SlowDown(string) time.Duration                  { return 0 }

// benchPrewrite has every pod's drain write the batches it will hand off in a window (one a
// benchPeriod), a few pods at a time, and returns them by pod.
func benchPrewrite(cl *cluster, pods []*benchPod, window time.Duration) [][]captured {
	var mu sync.Mutex // cl.seal's sum
	out := make([][]captured, len(pods))
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i] = benchPrewritePod(cl, &mu, pods[i], i, window)
			}
		}()
	}
	for i := range pods {
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

func benchPrewritePod(cl *cluster, mu *sync.Mutex, p *benchPod, i int, window time.Duration) []captured {
	c := &captor{}
	p.env.Drain.Group = c
	for k := 0; time.Duration(k)*benchPeriod <= window; k++ {
		mu.Lock()
		cl.seal(p.pod, 1, benchRows, day.Add(time.Duration(i)*time.Minute+time.Duration(k)*benchPeriod))
		mu.Unlock()
		if err := cl.drain(p.pod, 3); err != nil {
			cl.t.Error(err)
		}
	}
	p.env.Drain.Group = p.client
	return c.batches
}

// benchHandOff is pod p's side of the window in a prewritten run: each batch handed to the
// committer through its client at first + k periods, and again a second later while it fails.
// Its lag is from the hand-off to the client's answer.
func benchHandOff(cl *cluster, p *benchPod, batches []captured, first time.Time) {
	for k, b := range batches {
		at := first.Add(time.Duration(k) * benchPeriod)
		time.Sleep(time.Until(at))
		for {
			_, _, err := p.client.Commit(context.Background(), b.t, b.req, b.epoch, b.at)
			if err == nil {
				p.lags = append(p.lags, time.Since(at))
				break
			}
			cl.t.Logf("%s batch %d: %v", p.name, k, err)
			time.Sleep(time.Second)
		}
	}
}
