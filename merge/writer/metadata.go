package writer

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/siglake/siglake/merge/index"
)

// MetadataOptions selects the search metadata written into output footers
// (format: docs/file-format.md). The zero value is the documented default.
type MetadataOptions struct {
	// GroupColumns are counted per value in the group-count footer.
	// Default ["service"]; columns the schema lacks are skipped.
	GroupColumns []string
	// RawColumn is the free-text column the blooms cover. Default "raw".
	RawColumn string
	// IndexColumns get a footer inverted index (in-memory path only).
	IndexColumns []string
	// InvertedIndexOff turns footer inverted indexes off
	// (SIGLAKE_INVERTED_INDEX=off, chart compactor.invertedIndex.enabled=false).
	InvertedIndexOff bool
	// FooterMaxBytes is the largest inverted index kept in the footer, per
	// column (SIGLAKE_INDEX_FOOTER_MAX_BYTES). Default 1 MiB.
	FooterMaxBytes int64
	// IndexAtFlush is the table setting index_at_flush: whether
	// generation-0 writes (drain flushes, delete-task rewrites) do the
	// whole-file index work. Default false.
	IndexAtFlush bool
}

// MetaMode says which metadata one write produces.
type MetaMode struct {
	opts      MetadataOptions
	wholeFile bool // whole-file trigram bloom and inverted indexes
}

// MetaFull is the mode of a writer that holds its whole output: everything the
// options ask for, except that generation-0 writes skip the whole-file index
// work unless index_at_flush is set.
func MetaFull(o MetadataOptions, generation int) MetaMode {
	return MetaMode{opts: o, wholeFile: generation > 0 || o.IndexAtFlush}
}

// MetaStreamed is the mode of the streamed paths: no whole-file structures.
func MetaStreamed(o MetadataOptions) MetaMode { return MetaMode{opts: o} }

// metaBuilder accumulates one file's search metadata as rows are written.
type metaBuilder = index.Builder

func newMetaBuilder(m MetaMode, sc *arrow.Schema) *metaBuilder {
	cfg := index.Config{
		GroupColumns:   m.opts.GroupColumns,
		RawColumn:      m.opts.RawColumn,
		FooterMaxBytes: m.opts.FooterMaxBytes,
		WholeFile:      m.wholeFile,
	}
	if !m.opts.InvertedIndexOff {
		cfg.IndexColumns = m.opts.IndexColumns
	}
	return index.NewBuilder(cfg, sc)
}

// DecodeFooter decodes the search metadata in a file's Parquet footer. The
// returned Footer is always usable (absent or malformed entries answer
// "maybe"); the error lists malformed entries.
func DecodeFooter(md *metadata.FileMetaData) (*index.Footer, error) {
	kv := map[string]string{}
	if md != nil {
		for _, e := range md.KeyValueMetadata() {
			if e.Value != nil {
				kv[e.Key] = *e.Value
			}
		}
	}
	return index.Decode(kv)
}
