package merge

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer"
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
	// TooLarge lists requested columns whose index would have held more than the
	// memory cap while being built (nothing built; they stay unindexed).
	TooLarge []string
	// NotInFile lists requested columns the file does not have.
	NotInFile []string
}

// BuildIndexes reads a data file's footer and builds the inverted index of each
// of columns that the footer does not carry. It reads one column at a time, a
// batch of reindexBatchRows at a time, so decoded memory is one batch of one
// column whatever the file size. The postings grow with the file's distinct
// values: a column whose index would hold more than maxMemBytes (estimated;
// 0 = no cap) is given up and listed in TooLarge, so a nearly unique column
// of a large file cannot exhaust the pod's memory.
func BuildIndexes(ctx context.Context, fs icebergio.IO, path string, columns []string, mem memory.Allocator, maxMemBytes int64) (FileIndexes, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	in, err := input.Open(fs, path, mem, reindexBatchRows)
	if err != nil {
		return FileIndexes{}, err
	}
	defer in.Close()
	footer, ferr := writer.DecodeFooter(in.Parquet.MetaData())
	out := FileIndexes{Footer: footer, Rows: in.Parquet.NumRows(), Built: map[string][]byte{}}
	_ = ferr // malformed entries are absent: an undecodable footer index gets rebuilt
	fsc, err := in.Arrow.Schema()
	if err != nil {
		return out, fmt.Errorf("reading schema of %s: %w", path, err)
	}
	var want []string
	for _, c := range columns {
		switch {
		case footer.HasInvertedIndex(c):
			out.InFooter = append(out.InFooter, c)
		case len(fsc.FieldIndices(c)) == 0:
			out.NotInFile = append(out.NotInFile, c)
		default:
			want = append(want, c)
		}
	}
	for _, c := range want {
		enc, err := buildColumnIndex(ctx, in, c, maxMemBytes)
		if err != nil {
			return out, fmt.Errorf("indexing %s of %s: %w", c, path, err)
		}
		if enc == nil {
			out.TooLarge = append(out.TooLarge, c)
			continue
		}
		out.Built[c] = enc
	}
	return out, nil
}

// buildColumnIndex reads one column of in and returns its encoded inverted index, or nil once
// the index holds more than maxMemBytes (0 = no cap).
func buildColumnIndex(ctx context.Context, in *input.File, column string, maxMemBytes int64) ([]byte, error) {
	rr, err := in.Arrow.GetRecordReader(ctx, input.LeafIndices(in, column), nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	p := index.NewPostings()
	col := rr.Schema().FieldIndices(column)[0]
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.Add(rr.RecordBatch().Column(col))
		if maxMemBytes > 0 && p.MemBytes() > maxMemBytes {
			return nil, nil
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if rows := in.Parquet.NumRows(); int64(p.Rows()) != rows {
		return nil, fmt.Errorf("read %d rows, the footer says %d", p.Rows(), rows)
	}
	return p.Encode(), nil
}

// ReadFooter decodes the search metadata in a data file's footer, reading only the footer.
// Malformed entries are absent ("maybe"), as in writer.DecodeFooter.
func ReadFooter(fs icebergio.IO, path string) (*index.Footer, error) {
	in, err := input.Open(fs, path, memory.DefaultAllocator, reindexBatchRows)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	f, _ := writer.DecodeFooter(in.Parquet.MetaData())
	return f, nil
}
