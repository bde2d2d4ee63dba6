package search

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/objstore"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/search/ordered"
)

// Options are how a search reads.
type Options struct {
	// MemoryBudget is the decoded memory the search's streams share; 0 takes the merge budget
	// (merge.DefaultMemoryBudget, SIGLAKE_MERGE_MEMORY_BYTES).
	MemoryBudget int64
	// SkipMetadata ignores siglake's search metadata (footer entries and Puffin sidecars), as if
	// the files had none: what the metadata buys, with the same rows (promise 7). Manifest bounds
	// and Parquet statistics are still used: every Iceberg reader has them.
	SkipMetadata bool
	// RawColumn is the free-text column --contains and --token search; default "raw".
	RawColumn string
	Mem       memory.Allocator

	dropKey    func(path, key string) bool             // see fileSource.dropKey
	editFooter func(path string, kv map[string]string) // see fileSource.editFooter
}

// Columns returns the columns a search of q prints, in order.
func Columns(t *table.Table, q Query, o Options) ([]string, error) {
	c, err := compile(q, t.Schema(), lake.TimestampColumn, rawColumn(o))
	if err != nil {
		return nil, err
	}
	return c.output, nil
}

func rawColumn(o Options) string {
	if o.RawColumn == "" {
		return "raw"
	}
	return o.RawColumn
}

// Run searches t's current snapshot and calls emit with each returned row in order (rec holds
// the row's columns; emit must not keep rec). emit returns the row's size for the report.
func Run(ctx context.Context, t *table.Table, q Query, o Options, emit func(rec arrow.RecordBatch, row int) (int64, error)) (*Explain, error) {
	c, err := compile(q, t.Schema(), lake.TimestampColumn, rawColumn(o))
	if err != nil {
		return nil, err
	}
	if o.MemoryBudget <= 0 {
		o.MemoryBudget = merge.DefaultMemoryBudget()
	}
	if o.Mem == nil {
		o.Mem = memory.DefaultAllocator
	}
	name := t.Identifier()[len(t.Identifier())-1]
	costBefore := objstore.CostOf(name)
	ex := &Explain{MemoryBudget: o.MemoryBudget}
	all, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return nil, err
	}
	filter, err := c.icebergFilter(t.Schema())
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", name, err)
	}
	planned, err := lake.LiveFilesMatching(ctx, t, filter)
	if err != nil {
		return nil, err
	}
	ex.Files.Considered = int64(len(all))
	if n := len(all) - len(planned); n > 0 {
		ex.Files.Pruned = map[Reason]int64{ByManifest: int64(n)}
	}
	fsys, err := t.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("search %s: open its FileIO: %w", name, err)
	}
	// iceberg-go's S3 FileIO opens a file with a whole-object GET (it learns the size from it);
	// a local open costs no request.
	openGets := strings.HasPrefix(t.Location(), "s3")
	src := &fileSource{c: c, fsys: countingIO{IO: fsys, n: &ioCount{}, openIsRequest: openGets}, skipMeta: o.SkipMetadata, mem: o.Mem, ex: ex, dropKey: o.dropKey, editFooter: o.editFooter}
	if !o.SkipMetadata {
		// A malformed registration is left out of the registry: its file is scanned.
		src.registry, _ = puffinidx.Parse(t.Properties())
	}
	bounds := make([][2]int64, len(planned))
	var rowBytes int64
	var rows int64
	for i, f := range planned {
		bounds[i] = [2]int64{f.MinTime, f.MaxTime}
		rowBytes += f.Size
		rows += f.Rows
	}
	if rows > 0 {
		// Compressed size is what the manifests know; decoded rows are a few times wider.
		rowBytes = 4 * rowBytes / rows
	}
	ex.OverlapDepth = ordered.OverlapDepth(bounds)
	src.shape = shapeFor(o.MemoryBudget, ex.OverlapDepth, len(c.decode), rowBytes)
	ex.BatchRows = src.shape.batchRows
	files := scanOrder(planned, c.desc, src)
	st, err := ordered.Merge(ctx, files, c.desc, c.limit, func(rec arrow.RecordBatch, row int) error {
		n, err := emit(rec, row)
		ex.ReturnedBytes += n
		return err
	})
	if err != nil {
		return ex, fmt.Errorf("search %s: %w", name, err)
	}
	ex.RowsReturned = st.Returned
	ex.MaxOpenStreams = st.MaxOpen
	if n := len(files) - st.Opened; n > 0 {
		ex.Files.prune(ByLimit)
		ex.Files.Pruned[ByLimit] = int64(n)
	}
	// Row groups of open files that the limit left unread.
	ex.RowGroups.Pruned = withLimit(ex.RowGroups, ex.RowGroups.Considered-ex.RowGroups.PrunedTotal()-ex.RowGroups.Read)
	total := src.fsys.n.snapshot()
	ex.DataBytes, ex.DataRequests = total.bytes-ex.FooterBytes, total.requests-ex.FooterRequests
	if strings.HasPrefix(t.Location(), "s3") {
		ops := objstore.CostOf(name).Sub(costBefore)
		d := ops.Total()
		ex.ObjectStore, ex.ObjectStoreOps = &d, ops
	}
	return ex, nil
}

func withLimit(s Stage, n int64) map[Reason]int64 {
	if n <= 0 {
		return s.Pruned
	}
	if s.Pruned == nil {
		s.Pruned = map[Reason]int64{}
	}
	s.Pruned[ByLimit] += n
	return s.Pruned
}

// scanOrder sorts the planned files by where the scan reaches them and ranks equal timestamps by
// path, so the order of rows never depends on how the files were laid out.
func scanOrder(files []lake.File, desc bool, src *fileSource) []ordered.File {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	sort.Strings(paths)
	rank := make(map[string]int, len(paths))
	for i, p := range paths {
		rank[p] = i
	}
	out := make([]ordered.File, len(files))
	for i, f := range files {
		start := f.MinTime
		if desc {
			start = f.MaxTime
		}
		out[i] = ordered.File{Start: start, Rank: rank[f.Path], Open: func(ctx context.Context) (ordered.Stream, error) { return src.open(ctx, f.Path) }}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Start != b.Start {
			if desc {
				return a.Start > b.Start
			}
			return a.Start < b.Start
		}
		if desc {
			return a.Rank > b.Rank
		}
		return a.Rank < b.Rank
	})
	return out
}
