package localwal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/siglake/siglake/localwal/internal/durable"
)

// SegmentInfo is what a directory listing says about a sealed segment.
// Table comes from the file name and is not yet validated: ReadAll rejects
// a bad one with reason bad_table_name so it can be quarantined.
type SegmentInfo struct {
	Path        string
	Name        string
	Table       string
	Incarnation uint64
	Seq         uint64
	Size        int64
	ModTime     time.Time // when the segment was sealed
}

// Less orders segments by (incarnation, seq), the order they were created.
func (s SegmentInfo) Less(o SegmentInfo) bool {
	if s.Incarnation != o.Incarnation {
		return s.Incarnation < o.Incarnation
	}
	if s.Seq != o.Seq {
		return s.Seq < o.Seq
	}
	return s.Name < o.Name
}

// Scan lists the sealed segments in dir, oldest (incarnation, seq) first.
// It ignores .open segments, dot-files, names it does not know and every
// subdirectory (quarantine/ in particular).
func Scan(dir string) ([]SegmentInfo, error) {
	segs, _, err := ScanIgnored(dir)
	return segs, err
}

// Reasons of Ignored entries.
const (
	// IgnoredNotRegular: named like a segment, but a symlink, directory or
	// device. Following a link would let the drain read (and remove) a file
	// outside the WAL dir, and quarantining would move only the link.
	IgnoredNotRegular = "not_regular"
	// IgnoredMisnamed: ends in .wal or .open but is not
	// <table>.<20 digits>.<20 digits> (unpadded numbers, dots in the table
	// part): its incarnation and seq cannot be known, so neither can its order.
	IgnoredMisnamed = "misnamed"
)

// IgnoredReasons lists the reasons of Ignored entries, for metric labels.
var IgnoredReasons = []string{IgnoredNotRegular, IgnoredMisnamed}

// Ignored is an entry of a WAL dir that looks like a segment but that Scan
// does not list, so it is never drained. Callers report it: a producer that
// writes such names loses those rows without anything else saying so.
type Ignored struct {
	Path   string
	Name   string
	Reason string // IgnoredNotRegular or IgnoredMisnamed
}

// ScanIgnored is Scan, plus the entries that look like segments but are not
// listed. Dot-files, STREAM, LOCK, other names and directories not named
// like segments are not reported.
func ScanIgnored(dir string) ([]SegmentInfo, []Ignored, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("scanning WAL dir %s: %w", dir, err)
	}
	var segs []SegmentInfo
	var ignored []Ignored
	ignore := func(name, reason string) {
		ignored = append(ignored, Ignored{Path: filepath.Join(dir, name), Name: name, Reason: reason})
	}
	for _, e := range ents {
		name := e.Name()
		if name[0] == '.' {
			continue
		}
		p, ok := parseName(name)
		if !ok {
			if !e.IsDir() && (strings.HasSuffix(name, SealedSuffix) || strings.HasSuffix(name, OpenSuffix)) {
				ignore(name, IgnoredMisnamed)
			}
			continue
		}
		if !e.Type().IsRegular() {
			ignore(name, IgnoredNotRegular)
			continue
		}
		if p.suffix != SealedSuffix {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by a concurrent drain
		}
		if err != nil {
			return nil, nil, fmt.Errorf("scanning WAL dir %s: stat %s: %w", dir, name, err)
		}
		if !fi.Mode().IsRegular() {
			ignore(name, IgnoredNotRegular)
			continue
		}
		segs = append(segs, SegmentInfo{
			Path: filepath.Join(dir, name), Name: name, Table: p.table,
			Incarnation: p.incarnation, Seq: p.seq,
			Size: fi.Size(), ModTime: fi.ModTime(),
		})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].Less(segs[j]) })
	return segs, ignored, nil
}

// Backlog summarises a scan: how many segments wait, their bytes and the
// seal time of the oldest (zero when there are none).
func Backlog(segs []SegmentInfo) (count int, bytes int64, oldest time.Time) {
	for _, s := range segs {
		bytes += s.Size
		if oldest.IsZero() || s.ModTime.Before(oldest) {
			oldest = s.ModTime
		}
	}
	return len(segs), bytes, oldest
}

// Remove deletes drained segments; call it only after the commit that
// holds them succeeded. One directory fsync covers all of them. A removal
// lost in a crash is harmless: the drain's stream mark filters the segment
// when it reappears.
func Remove(dir string, segs ...SegmentInfo) error {
	var errs []error
	for _, s := range segs {
		if err := os.Remove(s.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing drained segment: %w", err))
		}
	}
	if len(segs) > 0 {
		if err := durable.SyncDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ReasonFile is the JSON written next to a quarantined segment.
type ReasonFile struct {
	Segment string    `json:"segment"` // file name as it was in the WAL dir
	Reason  string    `json:"reason"`
	Detail  string    `json:"detail"`
	Time    time.Time `json:"time"`
}

// ReasonSuffix is appended to a quarantined file's name for its reason file.
const ReasonSuffix = ".reason.json"

// QuarantineMode is the mode of reason files, and the least a quarantined
// segment gets: readable by the owner and the group.
const QuarantineMode os.FileMode = 0o640

// Quarantined counts the segments in <dir>/quarantine: every regular file
// there except reason files and dot-files (a reason file being written).
// 0 without a quarantine directory.
func Quarantined(dir string) (int, error) {
	qdir := filepath.Join(dir, QuarantineDir)
	ents, err := os.ReadDir(qdir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing quarantine dir %s: %w", qdir, err)
	}
	n := 0
	for _, e := range ents {
		name := e.Name()
		if e.Type().IsRegular() && name[0] != '.' && !strings.HasSuffix(name, ReasonSuffix) {
			n++
		}
	}
	return n, nil
}

// Quarantine moves seg into <dir>/quarantine/ and writes
// <name>.reason.json beside it. It never deletes data: if a file of the
// same name is already quarantined, the new one gets a numeric suffix. It
// returns the segment's new path.
func Quarantine(dir string, seg SegmentInfo, reason, detail string) (string, error) {
	qdir := filepath.Join(dir, QuarantineDir)
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		return "", fmt.Errorf("creating quarantine dir %s: %w", qdir, err)
	}
	name := filepath.Base(seg.Path)
	target := filepath.Join(qdir, name)
	for i := 1; ; i++ {
		if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
			break
		} else if err != nil {
			return "", fmt.Errorf("checking quarantine target %s: %w", target, err)
		}
		target = filepath.Join(qdir, name+"."+strconv.Itoa(i))
	}
	if err := os.Rename(seg.Path, target); err != nil {
		return "", fmt.Errorf("quarantining %s: %w", seg.Path, err)
	}
	// Group-readable, so an operator's shell in the pod (often another user of the pod's group)
	// can read what the runbook says to read. Bits are only added, never taken away.
	if fi, err := os.Lstat(target); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&QuarantineMode != QuarantineMode {
		if err := os.Chmod(target, fi.Mode().Perm()|QuarantineMode); err != nil {
			return "", fmt.Errorf("making quarantined %s group-readable: %w", target, err)
		}
	}
	data, err := json.MarshalIndent(ReasonFile{Segment: name, Reason: reason, Detail: detail, Time: time.Now().UTC()}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding quarantine reason for %s: %w", target, err)
	}
	if err := durable.WriteFile(target+ReasonSuffix, append(data, '\n'), QuarantineMode); err != nil {
		return "", err
	}
	// durable.WriteFile synced qdir; the rename also changed dir.
	if err := durable.SyncDir(dir); err != nil {
		return "", err
	}
	return target, nil
}

// MaxIncarnation returns the largest incarnation named by any segment file
// in dir or its quarantine, sealed or open. A writer's new incarnation must
// exceed it even if the clock went backwards after STREAM was lost.
func MaxIncarnation(dir string) (uint64, error) {
	var max uint64
	for _, d := range []string{dir, filepath.Join(dir, QuarantineDir)} {
		ents, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) && d != dir {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("listing %s: %w", d, err)
		}
		for _, e := range ents {
			if p, ok := parseName(e.Name()); ok && p.incarnation > max {
				max = p.incarnation
			}
		}
	}
	return max, nil
}
