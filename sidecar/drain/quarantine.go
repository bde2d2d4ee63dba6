package drain

import (
	"fmt"

	"github.com/siglake/siglake/localwal"
)

// Quarantine is a bad segment the drain moved to quarantine, or tried to: Err says why the move
// failed (the segment stays in place and is tried again next cycle).
type Quarantine struct {
	Table  string
	Path   string
	Dest   string // where it went
	Reason string // a QuarantineReasons value
	Cause  error  // what is wrong with the segment
	Err    error
}

// quarantine moves a bad segment of dir to its quarantine; the observer records what happened.
func (d *Drain) quarantine(dir string, info localwal.SegmentInfo, reason string, cause error) Quarantine {
	dest, err := localwal.Quarantine(dir, info, reason, cause.Error())
	return Quarantine{Table: info.Table, Path: info.Path, Dest: dest, Reason: reason, Cause: cause, Err: err}
}

// quarantineOversize moves the segments above Cfg.MaxSegmentBytes to quarantine before a batch
// counts, reserves memory for or reads them: a batch holding one would wait for (or take) more
// memory than the process has, and hold back every good segment behind it.
func (d *Drain) quarantineOversize(segs []localwal.SegmentInfo, dirOf map[string]string) []localwal.SegmentInfo {
	limit := d.Cfg.MaxSegmentBytes
	if limit <= 0 {
		return segs
	}
	kept := segs[:0:0]
	for _, s := range segs {
		if s.Size > limit {
			d.observeQuarantine(d.quarantine(dirOf[s.Path], s, localwal.ReasonOversize, fmt.Errorf(
				"%d bytes, above the limit of %d (--wal-segment-max-mb / SIGLAKE_WAL_SEGMENT_MAX_MB); not read", s.Size, limit)))
			continue
		}
		kept = append(kept, s)
	}
	return kept
}
