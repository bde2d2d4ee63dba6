package merge

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/pqdecode"
	"github.com/siglake/siglake/merge/writer"
)

// Decoder names the library the k-way path decodes and merges its inputs with
// (SIGLAKE_MERGE_PARQUET_DECODER, docs/file-format.md "Decoders").
type Decoder string

const (
	// DecoderDefault is the process-wide choice (SetDefaultDecoder), parquet-go unless set.
	DecoderDefault Decoder = ""
	// DecoderArrow decodes with arrow-go's pqarrow readers into Arrow records: every path.
	DecoderArrow Decoder = "arrow"
	// DecoderParquetGo decodes the k-way path's inputs with github.com/parquet-go/parquet-go
	// and merges and encodes their values without Arrow (merge/pqdecode). A bin it cannot take
	// (valueMergeBlocker) runs on arrow-go, and the result says why.
	DecoderParquetGo Decoder = "parquet-go"
)

// Decoders are the accepted decoder names.
var Decoders = []Decoder{DecoderArrow, DecoderParquetGo}

var decoderChoice = &writer.Choice[Decoder]{What: "parquet decoder", Accepted: Decoders, Fallback: DecoderParquetGo}

// ParseDecoder parses a decoder name (SIGLAKE_MERGE_PARQUET_DECODER).
func ParseDecoder(s string) (Decoder, error) { return decoderChoice.Parse(s) }

// SetDefaultDecoder sets the decoder of every rewrite whose options leave Decoder empty; the
// sidecar sets it once at start, as it does the encoder (writer.SetDefaultEncoder).
func SetDefaultDecoder(d Decoder) { decoderChoice.SetDefault(d) }

func (d Decoder) resolve() Decoder { return decoderChoice.Resolve(d) }

// valueMergeBlocker says why the k-way merge of opened cannot run on parquet-go values, or nil.
// It takes what it can do correctly: no row filter or fold (they run on Arrow rows), inputs
// with exactly the output's Parquet schema (so their values and levels are the output's: no
// conform of added or retyped columns), every column one the parquet-go encoder writes, and
// search metadata over string columns; and an encoder not set to arrow.
func valueMergeBlocker(opened []*input.File, schema *arrow.Schema, opts RewriteOptions) error {
	switch {
	case opts.matcher != nil:
		return errors.New("a row filter needs Arrow rows")
	case opts.fold != nil:
		return errors.New("a fold needs Arrow rows")
	case opts.WriterOptions.Encoder.Named() == writer.EncoderArrow:
		return errors.New("the encoder is set to arrow, and the value path encodes with parquet-go")
	}
	tmpl, err := writer.Template(schema, opts.WriterOptions)
	if err != nil {
		return err
	}
	return pqdecode.Takes(opened, tmpl, opts.MemoryBudget)
}
