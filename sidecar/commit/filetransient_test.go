package commit

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// throttledIO is a table's file IO whose first stats fail as a throttled object store's HEADs do.
type throttledIO struct {
	icebergio.IO
	fails *atomic.Int32 // stats still to fail
}

func (f throttledIO) Stat(path string) (fs.FileInfo, error) {
	if f.fails.Add(-1) >= 0 {
		return nil, errors.New("HEAD: 503 SlowDown: please reduce your request rate")
	}
	if st, ok := f.IO.(icebergio.StatIO); ok {
		return st.Stat(path)
	}
	file, err := f.IO.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return file.Stat()
}

// TestFileCheckTransientFailure: while the object store fails the committer's stats (throttling),
// a request's files cannot be checked; it is not refused (no pod falls back) but kept, and
// commits once the stats succeed.
func TestFileCheckTransientFailure(t *testing.T) {
	cl := newCluster(t)
	var fails atomic.Int32
	fails.Store(3)
	_, _, obs, _ := cl.committer("owner", func(c *CommitterConfig) {
		c.FileIO = func(ctx context.Context, tb *table.Table) (icebergio.IO, error) {
			fsys, err := tb.FS(ctx)
			return throttledIO{IO: fsys, fails: &fails}, err
		}
	})
	setup := cl.pod("", nil) // creates the table, committing directly
	cl.seal(setup, 1, 100, day)
	cl.drainAll()
	p := cl.pod("owner", nil)
	cl.seal(p, 1, 300, day.Add(time.Hour))
	cl.drainAll()
	cl.checkOnce()
	if n := obs.count("refused:" + ReasonInvalid); n != 0 || p.obs.fallbacks() != 0 {
		t.Fatalf("%d refused, %d pod fallbacks: a throttled stat refused the request", n, p.obs.fallbacks())
	}
	if fails.Load() >= 0 {
		t.Fatalf("%d throttled stats left: the committer did not stat through its file IO", fails.Load())
	}
	if n := p.obs.count("done:" + OutcomeCommitted); n != 1 {
		t.Fatalf("pod saw %d committed, want its request committed by the committer once the stats work", n)
	}
}
