// Package pending keeps retention's pending deletions: the objects a retention commit removed
// from a table, listed in a table property until the delete delay has passed and no retained
// snapshot references them, then deleted from storage (Free). The entries live with the table,
// so whichever process owns it next finishes what another started.
package pending

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// Prefix prefixes the table properties that list objects retention removed from the table and
// will delete from storage: siglake.retention.pending.<id>.
const Prefix = tableprops.RetentionPending

// Version is the format version of a stored entry and list; readers refuse newer ones.
const Version = 1

// property reads and writes the pending deletions; one belongs under its id.
var property = tableprops.Codec[Entry]{Name: Prefix, What: "pending retention deletion",
	Version: func(p *Entry) *int { return &p.Version }, MinVersion: 1, MaxVersion: Version,
	KeyOf: func(p Entry) string { return Prefix + p.ID }}

// inlineFiles is the most paths a pending entry holds itself; a bigger removal (a dropped
// month) writes its list to an object beside the table metadata, so the metadata every later
// commit rewrites stays small.
const inlineFiles = 16

// Entry is one retention commit's removed objects, waiting for the delete delay and for every
// snapshot that references them to expire.
type Entry struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Files are the removed data files (inline), or List is the object that lists them.
	Files []string `json:"files,omitempty"`
	List  string   `json:"list,omitempty"`
	Count int      `json:"count"`
	Bytes int64    `json:"bytes"`
	// RemovedAt is when the commit that removed them was staged.
	RemovedAt time.Time `json:"removed_at"`
	// AfterSequence is the sequence number of the head that commit was staged on: the files are
	// referenced only by snapshots at or below it, so once every retained snapshot is above it,
	// none references them.
	AfterSequence int64 `json:"after_sequence"`
	// AfterSnapshotID and AfterTimestampMs are that head: on a format-version 1 table (no
	// sequence numbers) the entry waits until every retained snapshot is newer than it.
	AfterSnapshotID  int64 `json:"after_snapshot_id,omitempty"`
	AfterTimestampMs int64 `json:"after_timestamp_ms,omitempty"`
	// Deleting is set in the commit before the objects are deleted: a run that finds it set
	// deletes again (an object already gone is fine) without counting them as freed again.
	Deleting bool `json:"deleting,omitempty"`
}

// New is the entry of a removal of bytes staged at now, under a new id.
func New(now time.Time, bytes int64) Entry {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return Entry{ID: now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:]), Bytes: bytes, RemovedAt: now}
}

// After records the head a removal is staged on.
func (p *Entry) After(cur *table.Table) {
	s := cur.CurrentSnapshot()
	p.AfterSequence, p.AfterSnapshotID, p.AfterTimestampMs = s.SequenceNumber, s.SnapshotID, s.TimestampMs
}

// pendingList is the stored form of a list object.
type pendingList struct {
	Version int      `json:"version"`
	Files   []string `json:"files"`
}

// List returns the pending deletions stored in props, oldest first, and an error for each
// property that does not decode (left alone: never deleted from, never removed).
func List(props iceberg.Properties) ([]Entry, []error) {
	entries, errs := property.List(props)
	var out []Entry
	for _, e := range entries {
		out = append(out, e.Value) // by key, which is by id
	}
	return out, errs
}

// Due says whether p's objects may be deleted: the delay has passed since the removal, and every
// snapshot t retains is above the head the removal was staged on (no snapshot a reader can
// still open references them).
func (p Entry) Due(t *table.Table, now time.Time, delay time.Duration) (bool, string) {
	if wait := p.RemovedAt.Add(delay).Sub(now); wait > 0 {
		return false, fmt.Sprintf("delete delay: %s left", wait.Round(time.Second))
	}
	for _, s := range t.Metadata().Snapshots() {
		older := s.SequenceNumber <= p.AfterSequence
		if p.AfterSequence == 0 { // format version 1: no sequence numbers
			older = s.SnapshotID == p.AfterSnapshotID || s.TimestampMs <= p.AfterTimestampMs
		}
		if older {
			return false, fmt.Sprintf("snapshot %d (retained) still references the files; snapshot expiry removes it", s.SnapshotID)
		}
	}
	return true, ""
}

// Stage writes p into txn (and, for a big removal, its list object first). It returns the list
// object written, which the caller removes when the commit fails cleanly.
func Stage(txn *table.Transaction, fsys icebergio.WriteFileIO, location string, p Entry, files []string) (string, error) {
	p.Version = Version
	p.Count = len(files)
	if len(files) <= inlineFiles {
		p.Files = files
	} else {
		p.List = strings.TrimSuffix(location, "/") + "/metadata/siglake-retention-" + p.ID + ".json"
		b, err := json.Marshal(pendingList{Version: Version, Files: files})
		if err != nil {
			return "", err
		}
		if err := fsys.WriteFile(p.List, b); err != nil {
			return "", fmt.Errorf("write the pending deletion list %s: %w", p.List, err)
		}
	}
	v, err := property.Encode(p)
	if err != nil {
		return p.List, err
	}
	return p.List, txn.SetProperties(iceberg.Properties{Prefix + p.ID: string(v)})
}

// paths are p's files; a list object already deleted means its files were deleted before it.
func (p Entry) paths(fsys icebergio.IO) ([]string, bool, error) {
	if p.List == "" {
		return p.Files, true, nil
	}
	f, err := fsys.Open(p.List)
	if err != nil {
		if IsNotExist(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("open the pending deletion list %s: %w", p.List, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, false, fmt.Errorf("read the pending deletion list %s: %w", p.List, err)
	}
	var l pendingList
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, false, fmt.Errorf("the pending deletion list %s: %w", p.List, err)
	}
	return l.Files, true, nil
}

// Referenced lists the objects t's pending retention deletions hold (the files and the list
// objects): `siglake gc` keeps them, so nothing goes before the delete delay, and retention
// itself deletes them when they are due. An unreadable list is an error: gc must then delete
// nothing in the table.
func Referenced(t *table.Table) ([]string, error) {
	ps, errs := List(t.Properties())
	if len(errs) > 0 {
		return nil, errs[0]
	}
	var out []string
	var fsys icebergio.IO
	for _, p := range ps {
		if p.List != "" {
			out = append(out, p.List)
			if fsys == nil {
				var err error
				if fsys, err = t.FS(context.Background()); err != nil {
					return nil, err
				}
			}
		}
		files, _, err := p.paths(fsys)
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// IsNotExist: the object is gone (a retry after a partial delete). The gocloud FileIO does not
// always wrap fs.ErrNotExist, so its messages count too.
func IsNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || err != nil && (strings.Contains(err.Error(), "no such file") || strings.Contains(err.Error(), "NoSuchKey") ||
		strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "NotFound"))
}
