package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/lake"
)

// A batch in flight is recorded in its WAL dir as a hidden marker file (the scan skips dot
// files): written before the batch's files, rewritten with their locations once they are written,
// removed when the batch returns (committed, failed or stopped cleanly). A marker found at start
// is a batch the previous run did not finish: it was killed (kill -9, OOM, node loss) mid-batch.
// Exactly-once does not need it (the mark and the segments decide); it tells the operator, and
// counts the files the interrupted batch left for gc.
const inflightPrefix = ".inflight-"

// inflight is a marker's content.
type inflight struct {
	Table string `json:"table"`
	// Node is the process that ran the batch (--node-name): with catalog claims a stream, and its
	// markers, pass between processes.
	Node    string    `json:"node,omitempty"`
	Started time.Time `json:"started"`
	PID     int       `json:"pid"`
	// Files are the data files the batch wrote, once written (empty: killed before or while writing).
	Files []string `json:"files,omitempty"`
}

func inflightPath(dir, table string) string { return filepath.Join(dir, inflightPrefix+table+".json") }

// writeInflight records m in dir, replacing the marker atomically (a torn marker would read as
// another table's).
func writeInflight(dir string, m inflight, writeFile func(string, []byte, os.FileMode) error) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	p := inflightPath(dir, m.Table)
	tmp := p + ".tmp"
	if err := writeFile(tmp, raw, 0o644); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("record batch in flight: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("record batch in flight: %w", err)
	}
	return nil
}

// recordInflight writes the batch's marker. A failure (a full or read-only WAL disk) is recorded
// in the outcome instead of failing the batch: the marker only tells the next start about a kill,
// while the batch's commit is what frees the WAL disk. Without a marker a kill during this batch
// goes unreported; exactly-once does not depend on it.
func (d *Drain) recordInflight(c *batchCommit) {
	write := d.writeMarkerFile
	if write == nil {
		write = os.WriteFile
	}
	if err := writeInflight(c.b.dir, c.flight, write); err != nil {
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
// process drains, reports them (one warn line, the status, siglake_drain_interrupted_batch_files)
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
		// A marker write the previous run did not finish (killed, or a full disk).
		tmps, _ := filepath.Glob(filepath.Join(dir, inflightPrefix+"*.json.tmp"))
		for _, p := range tmps {
			_ = os.Remove(p)
		}
		names, _ := filepath.Glob(filepath.Join(dir, inflightPrefix+"*.json"))
		for _, p := range names {
			raw, err := os.ReadFile(p)
			var m inflight
			if err == nil {
				err = json.Unmarshal(raw, &m)
			}
			if err != nil || m.Table == "" {
				m.Table = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), inflightPrefix), ".json")
			}
			b := InterruptedBatch{Table: m.Table, Dir: dir, Node: m.Node, Started: m.Started, FilesWritten: len(m.Files)}
			b.LeftForGC = d.uncommitted(ctx, m)
			u.Batches = append(u.Batches, b)
			u.LeftForGC += b.LeftForGC
			_ = os.Remove(p)
		}
	}
	if len(u.Batches) == 0 {
		return nil
	}
	u.DetectedAt = d.Now()
	d.observeUncleanStop(&u)
	return &u
}

// uncommitted counts m's files that t's current snapshot does not reference; all of them when
// the table cannot be read (they are orphans unless the commit happened).
func (d *Drain) uncommitted(ctx context.Context, m inflight) int {
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
	tables := make([]string, 0, len(u.Batches))
	for _, b := range u.Batches {
		tables = append(tables, b.Table)
	}
	d.Log.Warn("the previous run stopped mid-batch (killed, not a clean stop): its segments are drained again; files it wrote but did not commit are left for siglake gc",
		zap.Strings("tables", tables), zap.Int("batches", len(u.Batches)), zap.Int("files_left_for_gc", u.LeftForGC))
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
