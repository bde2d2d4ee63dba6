package input

import (
	"errors"
	"fmt"
	"io"
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

func NewError(op, path string, err error) error { return &InputError{Path: path, Op: op, Err: err} }

// IOError marks a failure of the storage under an input (opening it, a read or seek the store or
// the network failed), as opposed to bytes that do not decode: the first may heal by itself (a
// 503, a reset), the second does not. io.EOF is not one: a short file ends in it, and the
// decoder tells that apart.
type IOError struct{ Err error }

func (e *IOError) Error() string { return e.Err.Error() }
func (e *IOError) Unwrap() error { return e.Err }

func ioErr(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return &IOError{Err: err}
}

func PanicError(what string, r any) error {
	return fmt.Errorf("merge aborted by a panic while %s (corrupt input?): %v", what, r)
}
