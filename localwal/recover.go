package localwal

import (
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/siglake/siglake/localwal/internal/durable"
)

// endOfStream is the Arrow IPC end-of-stream marker: continuation token
// 0xFFFFFFFF followed by a zero metadata length.
var endOfStream = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// Recovered says what Recover did with one .open segment.
type Recovered struct {
	Path    string // the .open file as found
	Action  string // "sealed", "removed" (held no rows) or "quarantined"
	Rows    int64  // rows kept when sealed
	Reason  string // reject reason when quarantined
	NewPath string
}

// Recover salvages the .open segments a crashed writer left in dir, oldest
// seq first. A segment keeps the longest run of complete, valid record
// batches from its start: the file is cut after it, given an end-of-stream
// marker, fsynced and sealed under its own name. A segment without rows is removed; one whose
// header or schema is unusable is quarantined. walwriter.New runs this before
// handing out a new seq: sealing an old seq after newer segments of the
// same table were drained would put it below the drain's mark, and the
// drain would skip it.
func Recover(dir string) ([]Recovered, error) {
	return RecoverLimit(dir, DefaultMaxRecoverBytes)
}

// DefaultMaxRecoverBytes is the largest .open file Recover reads: the
// drain's default limit for a sealed segment (64 MiB, eight times the
// default roll size). A segment is read whole, so a runaway file (a writer
// that never rolled, a stray copy) must not take the writer's memory.
const DefaultMaxRecoverBytes = 64 << 20

// RecoverLimit is Recover reading no .open file above max bytes (0: no
// limit); a larger one is quarantined as oversize without being read.
func RecoverLimit(dir string, max int64) ([]Recovered, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing WAL dir %s for recovery: %w", dir, err)
	}
	var open []SegmentInfo
	for _, e := range ents {
		if p, ok := parseName(e.Name()); ok && p.suffix == OpenSuffix && !e.IsDir() {
			open = append(open, SegmentInfo{Path: filepath.Join(dir, e.Name()), Name: e.Name(),
				Table: p.table, Incarnation: p.incarnation, Seq: p.seq})
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].Less(open[j]) })
	var out []Recovered
	for _, seg := range open {
		r, err := recoverOne(dir, seg, max)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func recoverOne(dir string, seg SegmentInfo, max int64) (Recovered, error) {
	r := Recovered{Path: seg.Path}
	data, rerr := readFile(seg.Path, max)
	if rerr != nil && rerr.Reason == ReasonOversize {
		var err error
		r.Action, r.Reason = "quarantined", rerr.Reason
		r.NewPath, err = Quarantine(dir, seg, rerr.Reason, "recovering open segment: "+rerr.Error())
		return r, err
	}
	if rerr != nil {
		return r, fmt.Errorf("reading open segment for recovery: %w", rerr)
	}
	var decoded *Segment
	var keep int64
	var serr *SegmentError
	if len(data) > 0 {
		decoded, keep, serr = decode(seg.Path, data, ReadOptions{}, true)
	}
	switch {
	case serr != nil && serr.Reason != ReasonTruncated:
		// A writer died before the schema message was complete, or the
		// header is unusable: keep the bytes for a human.
		r.Action, r.Reason = "quarantined", serr.Reason
		var err error
		r.NewPath, err = Quarantine(dir, seg, serr.Reason, "recovering open segment: "+serr.Error())
		return r, err
	case serr != nil || len(data) == 0 || decoded.Rows == 0:
		// Nothing but (part of) a schema: no rows to lose.
		if decoded != nil {
			decoded.Release()
		}
		r.Action = "removed"
		if err := os.Remove(seg.Path); err != nil {
			return r, fmt.Errorf("removing empty open segment: %w", err)
		}
		return r, durable.SyncDir(dir)
	}
	r.Rows = decoded.Rows
	version := decoded.Header.Version
	decoded.Release()
	var trailer []byte
	if version >= 2 {
		// The sealed file must verify like one the writer sealed.
		trailer = Trailer(crc32.Update(Checksum(data[:keep]), castagnoli, endOfStream))
	}
	if err := sealPrefix(seg.Path, keep, trailer); err != nil {
		return r, err
	}
	r.Action = "sealed"
	r.NewPath = strings.TrimSuffix(seg.Path, OpenSuffix) + SealedSuffix
	if err := os.Rename(seg.Path, r.NewPath); err != nil {
		return r, fmt.Errorf("sealing recovered segment %s: %w", seg.Path, err)
	}
	return r, durable.SyncDir(dir)
}

// sealPrefix cuts path after keep bytes and appends the end-of-stream
// marker and trailer (nil for a version 1 segment), durably.
func sealPrefix(path string, keep int64, trailer []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("opening open segment for recovery: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(keep); err != nil {
		return fmt.Errorf("cutting %s after %d bytes: %w", path, keep, err)
	}
	if _, err := f.WriteAt(append(append([]byte(nil), endOfStream...), trailer...), keep); err != nil {
		return fmt.Errorf("ending stream of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return f.Close()
}
