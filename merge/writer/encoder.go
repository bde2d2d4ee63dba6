package writer

import (
	"bytes"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Encoder names the library that encodes the re-encoded rows of every output (docs/file-format.md,
// "Encoders"). Decoding, the footer, the page indexes' layout, the search metadata and the chunk
// sums do not depend on it: the sink lays out every file itself from one-column files either
// encoder writes.
type Encoder string

const (
	// EncoderDefault is the process-wide choice (SetDefaultEncoder), auto unless set.
	EncoderDefault Encoder = ""
	// EncoderAuto takes, for each writer, the encoder measured faster on its rows
	// (docs/benchmarks.md, "Each codec where it is faster"): parquet-go for the drain's files,
	// arrow-go for merges whose rows an arrow-go decoder produced (the splice measured about 7%
	// more CPU with parquet-go, the k-way path on Arrow rows the same). A k-way merge on
	// parquet-go's values encodes with parquet-go whatever this says.
	EncoderAuto Encoder = "auto"
	// EncoderArrow is arrow-go's pqarrow writer, the encoder siglake has always used.
	EncoderArrow Encoder = "arrow"
	// EncoderParquetGo is github.com/parquet-go/parquet-go's column writers, fed values
	// shredded from the Arrow arrays (issue 36).
	EncoderParquetGo Encoder = "parquet-go"
)

// Encoders are the accepted encoder names.
var Encoders = []Encoder{EncoderAuto, EncoderArrow, EncoderParquetGo}

var encoderChoice = &Choice[Encoder]{What: "parquet encoder", Accepted: Encoders, Fallback: EncoderAuto}

// ParseEncoder parses an encoder name (SIGLAKE_MERGE_PARQUET_ENCODER).
func ParseEncoder(s string) (Encoder, error) { return encoderChoice.Parse(s) }

// SetDefaultEncoder sets the encoder of every sink whose Options leave Encoder empty. The sidecar
// sets it once at start from its configuration: a process-wide codec choice, as the zstd
// codec's registration is, so the many callers of the writer need not carry it.
func SetDefaultEncoder(e Encoder) { encoderChoice.SetDefault(e) }

// Named is e, or the process default when e is empty, without taking auto as either encoder:
// what the operator asked for. The k-way merge on parquet-go values encodes with parquet-go,
// so it runs only when this is not arrow (one switch rolls back every parquet-go encoding).
func (e Encoder) Named() Encoder { return encoderChoice.Resolve(e) }

// resolve is e named, with auto taken as a merge's: arrow-go.
func (e Encoder) resolve() Encoder { return e.or(EncoderArrow) }

// ForDrain is the encoder of the drain's files: e named, with auto taken as parquet-go (0.80x
// arrow-go's CPU a drain, docs/benchmarks.md).
func (e Encoder) ForDrain() Encoder { return e.or(EncoderParquetGo) }

// or is e named, or auto's choice when that is auto.
func (e Encoder) or(auto Encoder) Encoder {
	if r := e.Named(); r != EncoderAuto {
		return r
	}
	return auto
}

// columnEncoder encodes the rows of one top-level column of a row group into a one-row-group
// Parquet file in memory, whose column chunks the sink then copies into the output.
type columnEncoder interface {
	// WriteArrays appends the rows of cols, in order.
	WriteArrays(cols []arrow.Array) error
	// Finish writes the file's footer and returns it parsed.
	Finish() (*metadata.FileMetaData, error)
	// Abort drops what was written.
	Abort()
}

// arrowColumn is the arrow-go encoder of one column.
type arrowColumn struct {
	sc *arrow.Schema
	fw *pqarrow.FileWriter
}

func newArrowColumn(sc *arrow.Schema, buf *bytes.Buffer, opts Options) (*arrowColumn, error) {
	fw, err := pqarrow.NewFileWriter(sc, buf, writerProperties(opts), spliceArrowProps(opts))
	if err != nil {
		return nil, err
	}
	return &arrowColumn{sc: sc, fw: fw}, nil
}

func (a *arrowColumn) WriteArrays(cols []arrow.Array) error {
	for _, col := range cols {
		rec := array.NewRecordBatch(a.sc, []arrow.Array{col}, int64(col.Len()))
		err := a.fw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *arrowColumn) Finish() (*metadata.FileMetaData, error) {
	if err := a.fw.Close(); err != nil {
		return nil, err
	}
	return a.fw.FileMetadata()
}

func (a *arrowColumn) Abort() { _ = a.fw.Close() }
