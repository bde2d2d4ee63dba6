package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/writer"
)

// codecFloor is the "arrow-go copy" contender: it decodes every input with pqarrow and
// encodes the rows, unsorted, into one file with siglake's Parquet settings. No merge, no
// search metadata: the CPU every siglake merge path pays before doing any work of its own,
// in the Parquet library the project builds on.
func codecFloor(ctx context.Context, s inputSet, out string) (childResult, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return childResult{}, err
	}
	start, cpu0 := time.Now(), cpuSeconds()
	path := filepath.Join(out, "copy.parquet")
	f, err := os.Create(path)
	if err != nil {
		return childResult{}, err
	}
	defer f.Close()
	fw, err := pqarrow.NewFileWriter(arrowSchema(), f, writer.ParquetWriterProperties(merge.WriterOptions{}), pqarrow.DefaultWriterProps())
	if err != nil {
		return childResult{}, err
	}
	var rows int64
	for _, in := range s.Inputs {
		pf, err := file.OpenParquetFile(in.Path, false)
		if err != nil {
			return childResult{}, err
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 16 * 1024}, memory.DefaultAllocator)
		if err != nil {
			pf.Close()
			return childResult{}, err
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			pf.Close()
			return childResult{}, err
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			rows += rec.NumRows()
			if err := fw.WriteBuffered(rec); err != nil {
				rr.Release()
				pf.Close()
				return childResult{}, err
			}
		}
		err = rr.Err()
		rr.Release()
		pf.Close()
		if err != nil {
			return childResult{}, err
		}
	}
	if err := fw.Close(); err != nil {
		return childResult{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return childResult{}, err
	}
	return childResult{Seconds: time.Since(start).Seconds(), CPU: cpuSeconds() - cpu0, Files: 1, Rows: rows, OutBytes: st.Size()}, nil
}
