package drain

import (
	"context"
	"errors"
	"os"
	"sort"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/drain/marker"
	"github.com/siglake/siglake/sidecar/lake"
)

// recordInflight writes the batch's marker. A failure (a full or read-only WAL disk) is recorded
// in the outcome instead of failing the batch: the marker only tells the next start about a kill,
// while the batch's commit is what frees the WAL disk. Without a marker a kill during this batch
// goes unreported; exactly-once does not depend on it.
func (d *Drain) recordInflight(c *batchCommit) {
	write := d.writeMarkerFile
	if write == nil {
		write = os.WriteFile
	}
	if err := marker.Write(c.b.Dir, c.flight, write); err != nil {
		c.out.MarkerErrors = append(c.out.MarkerErrors, err)
	}
}

// InterruptedBatch is a batch the previous run left in flight: what /debug/status shows.
type InterruptedBatch struct {
	Table string `json:"table"`
	Dir   string `json:"dir"`
	// Node is the process that left it (empty in markers older than the field).
	Node    string    `json:"node,omitempty"`
	Started time.Time `json:"started"`
	// FilesWritten are the data files it had written (0: killed before its write finished).
	FilesWritten int `json:"files_written"`
	// LeftForGC are those the table does not reference (the commit never happened): orphans that
	// siglake gc removes once past its floor. The others were committed before the kill.
	LeftForGC int `json:"left_for_gc"`
	// HandedOff: its commit had gone to a group committer, which may still commit the files
	// counted in LeftForGC.
	HandedOff bool `json:"handed_off,omitempty"`
}

// UncleanStop is what a start found of a previous run that died mid-batch.
type UncleanStop struct {
	DetectedAt time.Time          `json:"detected_at"`
	Batches    []InterruptedBatch `json:"batches"`
	LeftForGC  int                `json:"left_for_gc"`
}

// uncleanPublisher is a Publisher that also shows an unclean stop (the process status does).
type uncleanPublisher interface{ UncleanStop(u *UncleanStop) }

// CheckUncleanStop looks for batches the previous run left in flight in the WAL dirs this
// process drains, reports them (a warn line per process that left batches, the status,
// siglake_drain_interrupted_batch_files)
// and removes their markers. It returns nil when the previous run stopped cleanly. With catalog
// claims, a stream directory whose claim this process takes later is checked when it takes it
// (Cycle): its markers are another process's.
func (d *Drain) CheckUncleanStop(ctx context.Context) *UncleanStop {
	dirs := d.walDirs()
	d.checkedDirs = setOf(dirs)
	return d.checkUnclean(ctx, dirs)
}

// checkTakenOver checks the markers of the WAL dirs this cycle drains that the cycle before did
// not (a stream whose claim this process took over since), before any batch of theirs could
// overwrite a marker the stream's previous holder left.
func (d *Drain) checkTakenOver(ctx context.Context, dirs []string) {
	var taken []string
	for _, dir := range dirs {
		if !d.checkedDirs[dir] {
			taken = append(taken, dir)
		}
	}
	d.checkedDirs = setOf(dirs)
	if len(taken) > 0 {
		d.checkUnclean(ctx, taken)
	}
}

func setOf(dirs []string) map[string]bool {
	m := make(map[string]bool, len(dirs))
	for _, dir := range dirs {
		m[dir] = true
	}
	return m
}

// checkUnclean reports and removes the markers in dirs; nil when there are none. What it finds is
// added to what this process found before, which the status shows.
func (d *Drain) checkUnclean(ctx context.Context, dirs []string) *UncleanStop {
	var u UncleanStop
	for _, dir := range dirs {
		for _, m := range marker.Read(dir) {
			b := InterruptedBatch{Table: m.Table, Dir: dir, Node: m.Node, Started: m.Started, FilesWritten: len(m.Files)}
			b.LeftForGC = d.uncommitted(ctx, m)
			b.HandedOff = m.HandedOff
			u.Batches = append(u.Batches, b)
			u.LeftForGC += b.LeftForGC
		}
	}
	if len(u.Batches) == 0 {
		return nil
	}
	u.DetectedAt = d.Now()
	d.observeUncleanStop(&u)
	// Removed only once reported: a kill while the catalog was read leaves them for the next start.
	for _, b := range u.Batches {
		marker.Remove(b.Dir, b.Table)
	}
	return &u
}

// uncommitted counts m's files that t's current snapshot does not reference; all of them when
// the table cannot be read (they are orphans unless the commit happened).
func (d *Drain) uncommitted(ctx context.Context, m marker.Marker) int {
	if len(m.Files) == 0 {
		return 0
	}
	t, err := d.Lake.LoadTable(ctx, m.Table)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return len(m.Files)
	}
	if err != nil {
		return len(m.Files)
	}
	live, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return len(m.Files)
	}
	ref := make(map[string]bool, len(live))
	for _, f := range live {
		ref[f.Path] = true
	}
	n := 0
	for _, f := range m.Files {
		if !ref[f] {
			n++
		}
	}
	return n
}

// observeUncleanStop reports u, and shows it added to what this process found before (the
// status value and the gauge cover every interrupted batch found since the start).
func (d *Drain) observeUncleanStop(u *UncleanStop) {
	for _, g := range byNode(u.Batches, d.Cfg.NodeName) {
		fields := []zap.Field{zap.Strings("tables", g.tables), zap.Int("batches", g.batches), zap.Int("files_left_for_gc", g.leftForGC)}
		if g.node != "" {
			fields = append(fields, zap.String("node", g.node))
		}
		d.Log.Warn(uncleanMessage(g.node, d.Claims != nil), fields...)
	}
	all := *u
	if d.unclean != nil {
		all.Batches = append(append([]InterruptedBatch(nil), d.unclean.Batches...), u.Batches...)
		all.LeftForGC += d.unclean.LeftForGC
	}
	d.unclean = &all
	if d.Metrics != nil && d.Metrics.InterruptedFiles != nil {
		d.Metrics.InterruptedFiles.Set(float64(all.LeftForGC))
	}
	if p, ok := d.publisher().(uncleanPublisher); ok {
		p.UncleanStop(&all)
	}
}

// leftBy is the interrupted batches one process left: node "" is this process's previous run.
type leftBy struct {
	node      string
	tables    []string
	batches   int
	leftForGC int
}

// byNode groups batches by the process that left them, this process's own previous run first
// (markers without a node are older than the field, from before claims passed streams around).
func byNode(batches []InterruptedBatch, self string) []leftBy {
	var out []leftBy
	at := map[string]int{}
	for _, b := range batches {
		node := b.Node
		if node == self {
			node = ""
		}
		i, ok := at[node]
		if !ok {
			i = len(out)
			at[node] = i
			out = append(out, leftBy{node: node})
		}
		out[i].tables = append(out[i].tables, b.Table)
		out[i].batches++
		out[i].leftForGC += b.LeftForGC
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].node == "" && out[j].node != "" })
	return out
}

// uncleanMessage says what happened to the batches node left in flight: this process's previous
// run (node "") was killed, or node was. Only with catalog claims do streams pass between
// processes; without them another node name in this process's own WAL dir is a run under an
// earlier --node-name (a renamed pod or host), not a takeover.
func uncleanMessage(node string, claims bool) string {
	const after = " (killed, not a clean stop): its segments are drained again; files it wrote but did not commit are left for siglake gc"
	switch {
	case node == "":
		return "the previous run of this process stopped mid-batch" + after
	case claims:
		return "node " + node + " stopped mid-batch in a stream whose claim this process took over" + after
	default:
		return "a previous run in this WAL dir, as node " + node + " (another --node-name), stopped mid-batch" + after
	}
}
