package commit

import (
	"context"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
)

// Client hands a pod's batches to their tables' committers (drain/handoff.GroupCommitter) and
// commits directly when none answers in time. (API only: the protocol follows.)
type Client struct {
	cfg ClientConfig
	tr  Transport
	m   Membership
}

// NewClient returns a client sending on tr to the committers m names.
func NewClient(cfg ClientConfig, tr Transport, m Membership) *Client {
	return &Client{cfg: cfg, tr: tr, m: m}
}

// Commit hands req to its table's committer and waits (handoff.GroupCommitter).
func (c *Client) Commit(ctx context.Context, t *table.Table, req lake.AppendRequest, epoch uint64) (lake.CommitResult, bool, error) {
	res, err := c.cfg.Lake.CommitAppend(ctx, req, c.cfg.Retry)
	return res, false, err
}

// Heartbeat tells the table's committer that stream has nothing in flight.
func (c *Client) Heartbeat(table, stream string, scan, pendingSince time.Time) {}

// SlowDown is the batch age the table's committer asked for.
func (c *Client) SlowDown(table string) time.Duration { return 0 }

// Status is the pod's part of /debug/status.
func (c *Client) Status() ClientStatus { return ClientStatus{} }
