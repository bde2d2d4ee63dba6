package merge

import (
	"errors"
	"fmt"
)

// ErrSchema marks rows that do not fit the table schema (Conform): a missing required column, a
// type that does not widen, nulls in a required column.
var ErrSchema = errors.New("conform")

// InputError is a failure that belongs to one input file of a merge: opening it, parsing its
// footer or schema, decoding its rows, or rows out of order. Callers use it to tell which file a
// failing merge keeps tripping on (a corrupt, truncated or missing object), as opposed to the
// outputs, the store or the catalog; sidecar/rewrite classifies the cause.
type InputError struct {
	Path string
	Op   string // what was being done: "opening input", "reading Parquet footer of input", ...
	Err  error
}

func (e *InputError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err) }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(op, path string, err error) error { return &InputError{Path: path, Op: op, Err: err} }
