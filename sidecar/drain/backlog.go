package drain

import (
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/drain/batches"
)

// ObserveBacklog publishes the sealed backlog segs (gauges and status); the process calls it
// while the catalog is unreachable, when no cycle runs.
func (d *Drain) ObserveBacklog(segs []localwal.SegmentInfo, now time.Time) {
	d.listQuarantine(now)
	d.observeBacklog(segs, now, d.quarantined, d.inQuarantine)
}

// scanBacklog scans dirs and publishes their backlog; a dir that cannot be scanned is left out
// with claims (as Cycle does), and without them nothing is published (Cycle reports the error).
func (d *Drain) scanBacklog(dirs []string, quarantined int64, inQuarantine int) {
	segs, _, errs := batches.ScanDirs(dirs)
	if len(errs) > 0 && d.Claims == nil {
		return
	}
	d.observeBacklog(segs, d.Now(), quarantined, inQuarantine)
}

// watchBacklog republishes the backlog of dirs every BacklogEvery until the returned stop is
// called (it returns once the watcher is done), so the gauges follow the WAL while a batch's
// commit waits. The quarantine count is the one at the start: the batch may change it.
func (d *Drain) watchBacklog(dirs []string) (stop func()) {
	every := d.BacklogEvery
	if every <= 0 {
		every = time.Second
	}
	q, iq := d.quarantined, d.inQuarantine
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				d.scanBacklog(dirs, q, iq)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// observeBacklog takes the quarantine counts as values: the watcher goroutine calls it while the
// drain's own goroutine may quarantine, so only that goroutine reads and writes the drain's counts.
func (d *Drain) observeBacklog(segs []localwal.SegmentInfo, now time.Time, quarantined int64, inQuarantine int) {
	var bytes int64
	var oldest time.Time
	for _, s := range segs {
		bytes += s.Size
		if oldest.IsZero() || s.ModTime.Before(oldest) {
			oldest = s.ModTime
		}
	}
	age := 0.0
	if !oldest.IsZero() {
		age = max(0, now.Sub(oldest).Seconds())
	}
	d.Metrics.SealedSegments.Set(float64(len(segs)))
	d.Metrics.SealedBytes.Set(float64(bytes))
	d.Metrics.OldestSealedAge.Set(age)
	d.publisher().Backlog(Backlog{Segments: len(segs), Bytes: bytes, OldestAgeSeconds: age, Quarantined: quarantined,
		InQuarantine: inQuarantine})
}

// listQuarantine recounts the segments in the quarantine dirs on the first call (so a restart
// shows what earlier runs left there), after a quarantine, and every quarantineRelist. A dir that
// cannot be listed keeps the last count: a wrong 0 would hide quarantined rows.
func (d *Drain) listQuarantine(now time.Time) {
	if !d.quarantineDirty && !d.quarantineListed.IsZero() && now.Sub(d.quarantineListed) < quarantineRelist {
		return
	}
	total := 0
	for _, dir := range d.walDirs() {
		n, err := localwal.Quarantined(dir)
		if err != nil {
			d.Log.Warn("cannot count the segments in quarantine; the gauge keeps its last value", zap.Error(err))
			return
		}
		total += n
	}
	d.inQuarantine, d.quarantineListed, d.quarantineDirty = total, now, false
	d.Metrics.InQuarantine.Set(float64(total))
}
