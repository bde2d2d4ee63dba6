package pending

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
)

// StageWritten stages p again with its already written list object (a retried commit).
func StageWritten(txn *table.Transaction, p Entry, list string, n int) error {
	p.Version, p.List, p.Count = Version, list, n
	v, err := jsonString(p)
	if err != nil {
		return err
	}
	return txn.SetProperties(iceberg.Properties{Prefix + p.ID: v})
}

// Freed is a pending deletion whose objects are gone. Retried: an earlier run had marked it, and
// counted its objects and bytes then.
type Freed struct {
	Entry   Entry
	Retried bool
}

// Unfreed is a due pending deletion some of whose objects could not be deleted; the next run
// retries.
type Unfreed struct {
	ID  string
	Err error
}

// Result is what one Free of a table did, for the caller's observer.
type Result struct {
	Freed   []Freed
	Unfreed []Unfreed
	// Bad are table properties that are not pending deletions: left alone.
	Bad []error
	// Files and Bytes are what this free deleted and counts (each entry counts once).
	Files int
	Bytes int64
	// Table is the table after the free; nil when it failed.
	Table *table.Table
}

// freeing is one Free under way.
type freeing struct {
	lake  *lake.Lake
	name  string
	now   time.Time
	delay time.Duration
	res   Result
}

// Free deletes the objects of table name's pending deletions that are due at now, then removes
// their entries. Before deleting, one commit marks the due entries as being deleted, so an
// entry's objects and bytes count once: a process that dies halfway leaves the marked entry, and
// the next owner deletes again (an object already gone is fine) without counting it again.
func Free(ctx context.Context, l *lake.Lake, name string, now time.Time, delay time.Duration) (Result, error) {
	f := &freeing{lake: l, name: name, now: now, delay: delay}
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return f.res, err
	}
	due, err := f.markDue(ctx, &t)
	if err != nil || len(due) == 0 {
		if err == nil {
			f.res.Table = t
		}
		return f.res, err
	}
	done, err := f.deleteDue(ctx, t, due)
	if err != nil {
		return f.res, err
	}
	if len(done) > 0 {
		if err := l.UpdateProperties(ctx, name, func(cur iceberg.Properties) (iceberg.Properties, []string) {
			return nil, slices.DeleteFunc(done, func(k string) bool { _, ok := cur[k]; return !ok })
		}); err != nil {
			return f.res, fmt.Errorf("remove freed retention entries of %s (their objects are gone; the next run removes the entries): %w", name, err)
		}
		if t, err = l.LoadTable(ctx, name); err != nil {
			return f.res, err
		}
	}
	f.res.Table = t
	return f.res, nil
}

// markDue returns the pending deletions of *t that are due, after marking those not marked yet
// as being deleted (*t is then reloaded). A stop leaves them all for the next run.
func (f *freeing) markDue(ctx context.Context, t **table.Table) ([]Entry, error) {
	ps, errs := List((*t).Properties())
	f.res.Bad = errs
	var due []Entry
	marked := iceberg.Properties{}
	for _, p := range ps {
		if ok, _ := p.Due(*t, f.now, f.delay); !ok {
			continue
		}
		due = append(due, p)
		if !p.Deleting {
			p.Deleting = true
			v, err := jsonString(p)
			if err != nil {
				return nil, err
			}
			marked[Prefix+p.ID] = v
		}
	}
	if len(due) == 0 || ctx.Err() != nil {
		return nil, nil
	}
	if len(marked) == 0 {
		return due, nil
	}
	if err := f.lake.UpdateProperties(ctx, f.name, func(cur iceberg.Properties) (iceberg.Properties, []string) {
		set := iceberg.Properties{}
		for k, v := range marked {
			if _, ok := cur[k]; ok { // not finished by another owner meanwhile
				set[k] = v
			}
		}
		return set, nil
	}); err != nil {
		return nil, err
	}
	var err error
	*t, err = f.lake.LoadTable(ctx, f.name)
	return due, err
}

// deleteDue deletes the objects of the due pending deletions still in t and returns the keys of
// those whose objects are all gone.
func (f *freeing) deleteDue(ctx context.Context, t *table.Table, due []Entry) ([]string, error) {
	fsys, err := t.FS(ctx)
	if err != nil {
		return nil, err
	}
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(files))
	for _, lf := range files {
		live[lf.Path] = true
	}
	var done []string
	for _, p := range due {
		if _, ok := t.Properties()[Prefix+p.ID]; !ok {
			continue
		}
		failed, err := deleteObjects(fsys, p, live)
		if err != nil {
			return nil, err
		}
		if failed != nil {
			f.res.Unfreed = append(f.res.Unfreed, Unfreed{ID: p.ID, Err: failed})
			continue
		}
		if !p.Deleting { // marked by this run: count it once
			f.res.Files += p.Count
			f.res.Bytes += p.Bytes
		}
		done = append(done, Prefix+p.ID)
		f.res.Freed = append(f.res.Freed, Freed{Entry: p, Retried: p.Deleting})
	}
	return done, nil
}

// deleteObjects deletes p's objects, never a live file whatever a list says (a hand-edited
// property): failed says why some are left; err that p's list cannot be read.
func deleteObjects(fsys icebergio.IO, p Entry, live map[string]bool) (failed, err error) {
	paths, _, err := p.paths(fsys)
	if err != nil {
		return nil, err
	}
	for _, path := range paths {
		if live[path] {
			failed = fmt.Errorf("pending deletion %s lists %s, which is live: not deleting it", p.ID, path)
			continue
		}
		if err := fsys.Remove(path); err != nil && !IsNotExist(err) {
			failed = fmt.Errorf("delete %s of pending deletion %s: %w", path, p.ID, err)
		}
	}
	if failed == nil && p.List != "" {
		if err := fsys.Remove(p.List); err != nil && !IsNotExist(err) {
			failed = fmt.Errorf("delete the pending deletion list %s: %w", p.List, err)
		}
	}
	return failed, nil
}

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
