package segments

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/drain/batches"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

// RetainedDir is the subdirectory of a WAL dir where committed segments wait out
// SIGLAKE_BUFFER_RETAIN_AFTER_DRAIN. The dot keeps it out of the drain's scan and out of the
// stream directories of a WAL root under catalog claims.
const RetainedDir = ".drained"

// A retained segment is named <table>.<incarnation>.<seq>.<prev incarnation>.<prev seq>.wal (20
// digits each): its WAL name plus the mark just below it, so a directory listing is the chain.
const retainedSuffix = ".wal"

func retainedName(s localwal.SegmentInfo, prev marks.Mark) string {
	return fmt.Sprintf("%s.%020d.%020d.%020d.%020d%s", s.Table, s.Incarnation, s.Seq, prev.Incarnation, prev.Seq, retainedSuffix)
}

// parseRetained splits a retained file name; ok=false for anything else.
func parseRetained(name string) (walName string, mark, prev marks.Mark, ok bool) {
	stem, found := strings.CutSuffix(name, retainedSuffix)
	parts := strings.Split(stem, ".")
	if !found || len(parts) != 5 {
		return "", mark, prev, false
	}
	walName = strings.Join(parts[:3], ".") + localwal.SealedSuffix
	_, inc, seq, ok := localwal.ParseSegmentName(walName)
	if !ok {
		return "", mark, prev, false
	}
	pn := parts[0] + "." + parts[3] + "." + parts[4] + localwal.SealedSuffix
	_, pinc, pseq, ok := localwal.ParseSegmentName(pn)
	if !ok {
		return "", mark, prev, false
	}
	return walName, marks.Mark{Incarnation: inc, Seq: seq}, marks.Mark{Incarnation: pinc, Seq: pseq}, true
}

// Retention keeps committed segments for a while after their drain, so a reader whose snapshot
// is a few commits old still gets its rows from the buffer instead of a refusal.
type Retention struct {
	// Keep is how long a retired segment is kept (SIGLAKE_BUFFER_RETAIN_AFTER_DRAIN).
	Keep time.Duration
	Now  func() time.Time
}

// Retire moves a committed batch's segments (in order) into dir's retention, each named with
// the mark just below it: prev for the first, the one before it for the others. It is the
// drain's Retire hook. A segment that cannot be moved is removed instead, which only breaks the
// chain (readers below it are refused, never given a gap).
func (r *Retention) Retire(dir string, prev marks.Mark, segs []localwal.SegmentInfo) error {
	rdir := filepath.Join(dir, RetainedDir)
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		return localwal.Remove(dir, segs...)
	}
	var errs []error
	now := r.now()
	for i, s := range segs {
		p := prev
		if i > 0 {
			p = marks.Mark{Incarnation: segs[i-1].Incarnation, Seq: segs[i-1].Seq}
		}
		target := filepath.Join(rdir, retainedName(s, p))
		if err := os.Rename(s.Path, target); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				if rerr := localwal.Remove(dir, s); rerr != nil {
					errs = append(errs, rerr)
				}
			}
			continue
		}
		// Kept from now: the file's time was its seal time, and Sweep reads it.
		_ = os.Chtimes(target, now, now)
	}
	if err := syncDir(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (r *Retention) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// Sweep removes the retained segments of dirs older than Keep (every one with Keep 0) and
// returns how many segments and bytes it keeps.
func (r *Retention) Sweep(dirs []string) (kept int, bytes int64, err error) {
	var errs []error
	cutoff := r.now().Add(-r.Keep)
	for _, dir := range dirs {
		rdir := filepath.Join(dir, RetainedDir)
		ents, lerr := os.ReadDir(rdir)
		if errors.Is(lerr, fs.ErrNotExist) {
			continue
		}
		if lerr != nil {
			errs = append(errs, fmt.Errorf("list retained segments: %w", lerr))
			continue
		}
		for _, e := range ents {
			if _, _, _, ok := parseRetained(e.Name()); !ok {
				continue
			}
			fi, ierr := e.Info()
			if ierr != nil {
				continue // removed meanwhile
			}
			if r.Keep > 0 && fi.ModTime().After(cutoff) {
				kept++
				bytes += fi.Size()
				continue
			}
			if rerr := os.Remove(filepath.Join(rdir, e.Name())); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove retained segment: %w", rerr))
			}
		}
	}
	return kept, bytes, errors.Join(errs...)
}

// ListRetained returns the retained segments of table in dir (Stream left empty).
func ListRetained(dir, table string) ([]Segment, error) {
	rdir := filepath.Join(dir, RetainedDir)
	ents, err := os.ReadDir(rdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list retained segments in %s: %w", rdir, err)
	}
	var out []Segment
	for _, e := range ents {
		if table != "" && !strings.HasPrefix(e.Name(), table+".") {
			continue
		}
		walName, mark, prev, ok := parseRetained(e.Name())
		if !ok {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // swept meanwhile
		}
		out = append(out, Segment{Name: walName, Path: filepath.Join(rdir, e.Name()), Mark: mark, Size: fi.Size(), Retained: true, Prev: prev})
	}
	return out, nil
}

// FindRetained looks for the WAL segment walName in dir's retention (it was retired after the
// listing that saw it in the WAL dir).
func FindRetained(dir, walName string) (Segment, bool) {
	stem := strings.TrimSuffix(walName, localwal.SealedSuffix)
	table, _, _, _ := localwal.ParseSegmentName(walName)
	segs, _ := ListRetained(dir, table)
	for _, s := range segs {
		if s.Name == walName && strings.HasPrefix(filepath.Base(s.Path), stem+".") {
			return s, true
		}
	}
	return Segment{}, false
}

// Dirs are the WAL dirs a process reads: the WAL dir itself, or under catalog claims every
// stream subdirectory of the WAL root (claimed by this process or not: the buffer serves the
// pod's WAL, whoever drains it).
func Dirs(walDir string, claims bool) ([]string, error) {
	if !claims {
		return []string{walDir}, nil
	}
	streams, _, err := batches.StreamDirs(walDir)
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(streams))
	for i, s := range streams {
		dirs[i] = filepath.Join(walDir, s)
	}
	return dirs, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s for fsync: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
