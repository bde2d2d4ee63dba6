package commit

import (
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// TestWatermarkFromRequests: pods that have a batch every cycle never heartbeat, so the watermark
// must come from their requests' progress (scan and pending times): once their batches are
// committed the committer publishes a complete-through time in its status and in the table.
func TestWatermarkFromRequests(t *testing.T) {
	begin := time.Now()
	cl := newCluster(t)
	c, _, _, _ := cl.committer("owner", nil)
	every := func(string) time.Duration { return 300 * time.Millisecond }
	for i := 0; i < 2; i++ {
		cl.pod("owner", func(cfg *ClientConfig) { cfg.Every = every })
	}
	// Batches keep coming, as from a busy pod: the committer publishes once it owned the table
	// for one liveness window (3 x 300 ms) and heard both streams within theirs.
	deadline := time.Now().Add(20 * time.Second)
	for k := 0; ; k++ {
		for i, p := range cl.pods {
			cl.seal(p, 1, 100, day.Add(time.Duration(k*2+i)*time.Minute))
		}
		cl.drainAll()
		st := c.Status()
		v, ok, err := CompleteThroughProperty.Read(cl.table().Properties())
		if len(st.Tables) == 1 && st.Tables[0].CompleteThrough.After(begin) && st.Tables[0].LiveStreams == 2 &&
			err == nil && ok && time.UnixMilli(v.TMs).After(begin) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %+v, %s = %q (%v): want a complete-through after %v over 2 live streams in both", st.Tables,
				tableprops.CompleteThrough, cl.table().Properties()[tableprops.CompleteThrough], err, begin)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cl.checkOnce()
}
