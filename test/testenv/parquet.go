package testenv

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ParquetRowSum reads a Parquet file with arrow-go and returns its row checksum over
// columns (all when none): what our own reader sees, to hold against DuckDB's view.
func ParquetRowSum(path string, columns ...string) (RowSum, error) {
	var s RowSum
	f, err := os.Open(path)
	if err != nil {
		return s, fmt.Errorf("open parquet %s: %w", path, err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return s, fmt.Errorf("read parquet footer of %s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return s, fmt.Errorf("arrow reader for %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return s, fmt.Errorf("record reader for %s: %w", path, err)
	}
	defer rr.Release()
	for rr.Next() {
		if err := s.Add(rr.RecordBatch(), columns...); err != nil {
			return s, fmt.Errorf("checksum of %s: %w", path, err)
		}
	}
	if err := rr.Err(); err != nil {
		return s, fmt.Errorf("read %s: %w", path, err)
	}
	return s, nil
}
