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
		p := cl.pod("owner", func(cfg *ClientConfig) { cfg.Every = every })
		cl.seal(p, 3, 200, day.Add(time.Duration(i)*time.Hour))
	}
	time.Sleep(time.Second) // past the committer's first liveness window (3 x 300 ms)
	start := time.Now()
	cl.drainAll()
	for _, p := range cl.pods { // one more batch each, so a commit carries the watermark
		cl.seal(p, 1, 200, day.Add(5*time.Hour))
	}
	cl.drainAll()
	cl.checkOnce()
	st := c.Status()
	if len(st.Tables) != 1 || st.Tables[0].CompleteThrough.Before(start) || st.Tables[0].LiveStreams != 2 {
		t.Fatalf("status %+v: want complete-through after %v over 2 live streams", st.Tables, start)
	}
	props := cl.table().Properties()
	v, ok, err := CompleteThroughProperty.Read(props)
	if err != nil || !ok || time.UnixMilli(v.TMs).Before(begin) {
		t.Fatalf("siglake.complete-through = %q (%v), want a time after %v", props[tableprops.CompleteThrough], err, begin)
	}
}
