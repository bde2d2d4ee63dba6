// Package filecheck checks the data files a pod hands to a table's committer against the object
// store and the table's partition spec before a group commit references them
// (docs/group-commit.md, "What keeps it exactly once"). Pure but for one stat per file.
package filecheck

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// A request's files are checked against the object store before a group commit takes them: each
// must exist with the size the request claims. A pod that died and whose files orphan gc removed
// meanwhile, or a request describing files it never wrote, must never make the table reference
// an object that is not there (every reader of the table would fail on it).

// Workers bounds the stats (one HEAD each on an object store) in flight for one group commit.
const Workers = 8

// Timeout bounds the stats of one group commit together; a file not checked in time is
// ErrUnchecked.
const Timeout = 10 * time.Second

// ErrUnchecked: a file's check could not be made (its stat timed out, the store answered an error
// other than not-found, the table's file IO did not open), so the file may well be there. Only a
// file missing or of another size refuses a request; an unchecked one is tried again in a later
// group commit, or under object-store throttling every pod would commit directly at once.
var ErrUnchecked = errors.New("file not checked")

// Stats checks the files of one group commit's requests: Stat stats every file of every request
// at once (bounded), Check reads the results. Safe for concurrent use.
type Stats struct {
	ctx     context.Context
	open    OpenFS
	mu      sync.Mutex
	results map[string]error // path -> why it does not match; nil when it does
}

// OpenFS opens the file IO a table's files are stated through.
type OpenFS func(ctx context.Context, t *table.Table) (icebergio.IO, error)

// NewStats returns the checks of one group commit; ctx bounds every stat (with Timeout). open nil
// stats through the table's own file IO (table.FS).
func NewStats(ctx context.Context, open OpenFS) *Stats {
	if open == nil {
		open = func(ctx context.Context, t *table.Table) (icebergio.IO, error) { return t.FS(ctx) }
	}
	return &Stats{ctx: ctx, open: open, results: map[string]error{}}
}

// Check says why files are not all in the object store at their claimed sizes (stating those not
// stated yet); nil if they are.
func (s *Stats) Check(t *table.Table, files []iceberg.DataFile) error {
	s.Stat(t, files)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range files {
		if err := s.results[f.FilePath()]; err != nil {
			return err
		}
	}
	return nil
}

// Stat stats the files not checked yet, Workers at a time, within Timeout.
func (s *Stats) Stat(t *table.Table, files []iceberg.DataFile) {
	var todo []iceberg.DataFile
	s.mu.Lock()
	for _, f := range files {
		if _, done := s.results[f.FilePath()]; !done {
			todo = append(todo, f)
		}
	}
	s.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, Timeout)
	defer cancel()
	fsys, err := s.open(ctx, t)
	if err != nil {
		s.record(todo, func(iceberg.DataFile) error {
			return fmt.Errorf("%w: open the table's file IO to check its files: %w", ErrUnchecked, err)
		})
		return
	}
	sem := make(chan struct{}, Workers)
	var wg sync.WaitGroup
	for _, f := range todo {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := checkStat(ctx, fsys, f)
			s.record([]iceberg.DataFile{f}, func(iceberg.DataFile) error { return err })
		}()
	}
	wg.Wait()
}

func (s *Stats) record(files []iceberg.DataFile, why func(iceberg.DataFile) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range files {
		s.results[f.FilePath()] = why(f)
	}
}

// checkStat says why f is not in fsys at its claimed size; nil if it is. Only not-found and a
// size mismatch are refusals; any other failure is ErrUnchecked.
func checkStat(ctx context.Context, fsys icebergio.IO, f iceberg.DataFile) error {
	p := f.FilePath()
	size, err := statSize(fsys, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("file %q does not exist (never written, or removed by orphan gc)", p)
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("%w: file %q: not checked within %v: %w", ErrUnchecked, p, Timeout, err)
	case err != nil:
		return fmt.Errorf("%w: check file %q: %w", ErrUnchecked, p, err)
	case size != f.FileSizeBytes():
		return fmt.Errorf("file %q is %d bytes, the request says %d", p, size, f.FileSizeBytes())
	}
	return nil
}

// statSize is the size of the object at path: one stat (a HEAD on an object store), or where the
// IO has no Stat, an open without reading.
func statSize(fsys icebergio.IO, path string) (int64, error) {
	if st, ok := fsys.(icebergio.StatIO); ok {
		fi, err := st.Stat(path)
		if err != nil {
			return 0, err
		}
		return fi.Size(), nil
	}
	f, err := fsys.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Partition says why df's partition disagrees with spec, the spec of the ids the request
// names; nil if it agrees. dir is the file's partition directory under the table's data
// directory ("timestamp_day=2026-11-28"). The partition record must have exactly spec's fields;
// their values, as the spec prints them, must make dir; and for an order-preserving transform
// (day) the file's lower and upper bounds of the source column must transform to the value, so
// its rows lie inside the partition the commit files them under.
func Partition(spec iceberg.PartitionSpec, schema *iceberg.Schema, df iceberg.DataFile, dir string) error {
	p, part := df.FilePath(), df.Partition()
	if len(part) != spec.NumFields() {
		return fmt.Errorf("file %q: %d partition values, partition spec %d has %d fields", p, len(part), spec.ID(), spec.NumFields())
	}
	var path []string
	for _, field := range spec.Fields() {
		v, ok := part[field.FieldID]
		if !ok || v == nil {
			return fmt.Errorf("file %q: no value for partition field %s", p, field.Name)
		}
		human := field.Transform.ToHumanStr(v)
		path = append(path, field.Name+"="+human)
		if err := checkBounds(field, schema, df, human); err != nil {
			return err
		}
	}
	if got := strings.Join(path, "/"); got != dir {
		return fmt.Errorf("file %q: partition %s disagrees with its directory %s", p, got, dir)
	}
	return nil
}

// checkBounds says why df's bounds of field's source column do not transform to want (the
// partition value as printed); nil when they do, or when the file has no bounds for it.
func checkBounds(field iceberg.PartitionField, schema *iceberg.Schema, df iceberg.DataFile, want string) error {
	if !field.Transform.PreservesOrder() {
		return nil
	}
	src, ok := schema.FindFieldByID(field.SourceID())
	if !ok {
		return fmt.Errorf("partition field %s: source column %d not in schema %d", field.Name, field.SourceID(), schema.ID)
	}
	for which, bounds := range map[string]map[int][]byte{"lower": df.LowerBoundValues(), "upper": df.UpperBoundValues()} {
		b, ok := bounds[field.SourceID()]
		if !ok {
			continue
		}
		lit, err := iceberg.LiteralFromBytes(src.Type, b)
		if err != nil {
			return fmt.Errorf("file %q: %s bound of %s: %w", df.FilePath(), which, src.Name, err)
		}
		out := field.Transform.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: lit})
		if got := "null"; !out.Valid || field.Transform.ToHumanStr(out.Val.Any()) != want {
			if out.Valid {
				got = field.Transform.ToHumanStr(out.Val.Any())
			}
			return fmt.Errorf("file %q: %s bound of %s is in partition %s=%s, the file's partition is %s", df.FilePath(), which, src.Name, field.Name, got, want)
		}
	}
	return nil
}
