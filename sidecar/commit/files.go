package commit

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/commit/filecheck"
	"github.com/siglake/siglake/sidecar/lake"
)

// EncodeFiles encodes a batch's data files for a request, in iceberg-go's cross-process encoding
// against t's format version, current schema and spec (those the drain wrote them for).
func EncodeFiles(t *table.Table, files []iceberg.DataFile) ([][]byte, error) {
	out := make([][]byte, len(files))
	for i, f := range files {
		b, err := codec.EncodeDataFile(f, t.Spec(), t.Schema(), t.Metadata().Version())
		if err != nil {
			return nil, fmt.Errorf("encode data file %s: %w", f.FilePath(), err)
		}
		out[i] = b
	}
	return out, nil
}

// DecodeFiles decodes r's data files with the schema and spec of its ids in t, the table a
// commit attempt loaded, and checks each is one a pod's drain of this very table wrote: a
// generation-0 Parquet data file in a day partition directory under t's data directory, whose
// partition values make that directory and whose timestamp bounds lie in that day. A
// request is authenticated, not trusted to be right: a file of another table, or a rewrite's
// output, committed by an append would duplicate its rows.
func DecodeFiles(t *table.Table, r Request) ([]iceberg.DataFile, error) {
	md := t.Metadata()
	if r.Format != md.Version() {
		return nil, fmt.Errorf("files encoded for table format version %d, the table is version %d", r.Format, md.Version())
	}
	var schema *iceberg.Schema
	for _, s := range md.Schemas() {
		if s.ID == r.SchemaID {
			schema = s
		}
	}
	spec := md.PartitionSpecByID(r.SpecID)
	if schema == nil || spec == nil {
		return nil, fmt.Errorf("schema %d or partition spec %d not in the table's metadata", r.SchemaID, r.SpecID)
	}
	files := make([]iceberg.DataFile, len(r.Files))
	for i, b := range r.Files {
		df, err := codec.DecodeDataFile(b, *spec, schema, r.Format)
		if err != nil {
			return nil, fmt.Errorf("data file %d: %w", i, err)
		}
		if err := checkFile(t, *spec, schema, df); err != nil {
			return nil, err
		}
		files[i] = df
	}
	return files, nil
}

// checkFile says why df, decoded with spec and schema, is not a drain's output for t; nil if it
// is.
func checkFile(t *table.Table, spec iceberg.PartitionSpec, schema *iceberg.Schema, df iceberg.DataFile) error {
	p := df.FilePath()
	if df.ContentType() != iceberg.EntryContentData || df.FileFormat() != iceberg.ParquetFile {
		return fmt.Errorf("file %q: content %v format %v, want Parquet data", p, df.ContentType(), df.FileFormat())
	}
	root := lake.DataDir(t, "") // <location>/data/<partition field>=
	rest, ok := strings.CutPrefix(p, root)
	day, name, one := strings.Cut(rest, "/")
	if !ok || !one || strings.Contains(name, "/") {
		return fmt.Errorf("file %q is not in a partition directory of table %s (%s...)", p, t.Identifier(), root)
	}
	if _, err := time.Parse("2006-01-02", day); err != nil {
		return fmt.Errorf("file %q: partition directory %s is not a day", p, quote(day))
	}
	if gen, ok := merge.ParseGeneration(name); !ok || gen != 0 {
		return fmt.Errorf("file %q is not a generation-0 drain output", p)
	}
	return filecheck.Partition(spec, schema, df, lake.PartitionField+"="+day)
}

// specID is the id of t's current partition spec.
func specID(t *table.Table) int {
	spec := t.Spec()
	return spec.ID()
}
