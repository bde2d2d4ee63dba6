package merge

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/index"
)

// reindexBatchRows bounds the decoded rows the index rebuild holds at once
// (of the indexed columns only).
const reindexBatchRows = 8192

// FileIndexes is what BuildIndexes found and built for one data file.
type FileIndexes struct {
	Footer *index.Footer // the file's own search metadata (never nil)
	Rows   int64
	// Built holds, per column, the encoded inverted index (index.Postings.Encode)
	// of each requested column the footer has no index for.
	Built map[string][]byte
	// InFooter lists requested columns the footer already indexes (nothing built).
	InFooter []string
	// NotInFile lists requested columns the file does not have.
	NotInFile []string
}

// BuildIndexes reads a data file's footer and builds the inverted index of each
// of columns that the footer does not carry. It reads only those columns, a
// batch of reindexBatchRows at a time, so decoded memory is one batch of them
// whatever the file size; the postings themselves grow with the file.
func BuildIndexes(ctx context.Context, fs icebergio.IO, path string, columns []string, mem memory.Allocator) (FileIndexes, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	in, err := openInput(fs, path, mem, reindexBatchRows)
	if err != nil {
		return FileIndexes{}, err
	}
	defer in.Close()
	footer, ferr := DecodeFooter(in.pf.MetaData())
	out := FileIndexes{Footer: footer, Rows: in.pf.NumRows(), Built: map[string][]byte{}}
	_ = ferr // malformed entries are absent: an undecodable footer index gets rebuilt
	fsc, err := in.fr.Schema()
	if err != nil {
		return out, fmt.Errorf("reading schema of %s: %w", path, err)
	}
	var want []string
	var leaves []int
	for _, c := range columns {
		switch {
		case footer.HasInvertedIndex(c):
			out.InFooter = append(out.InFooter, c)
		case len(fsc.FieldIndices(c)) == 0:
			out.NotInFile = append(out.NotInFile, c)
		default:
			want = append(want, c)
			leaves = append(leaves, leafIndices(in, c)...)
		}
	}
	if len(want) == 0 {
		return out, nil
	}
	rr, err := in.fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return out, fmt.Errorf("reading columns %v of %s: %w", want, path, err)
	}
	defer rr.Release()
	posts := make([]*index.Postings, len(want))
	cols := make([]int, len(want))
	for i, c := range want {
		posts[i] = index.NewPostings()
		cols[i] = rr.Schema().FieldIndices(c)[0]
	}
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		rec := rr.RecordBatch()
		for i, c := range cols {
			posts[i].Add(rec.Column(c))
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return out, fmt.Errorf("reading columns %v of %s: %w", want, path, err)
	}
	for i, c := range want {
		if int64(posts[i].Rows()) != out.Rows {
			return out, fmt.Errorf("indexing %s of %s: read %d rows, the footer says %d", c, path, posts[i].Rows(), out.Rows)
		}
		out.Built[c] = posts[i].Encode()
	}
	return out, nil
}

// ReadFooter decodes the search metadata in a data file's footer, reading only the footer.
// Malformed entries are absent ("maybe"), as in DecodeFooter.
func ReadFooter(fs icebergio.IO, path string) (*index.Footer, error) {
	in, err := openInput(fs, path, memory.DefaultAllocator, reindexBatchRows)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	f, _ := DecodeFooter(in.pf.MetaData())
	return f, nil
}
