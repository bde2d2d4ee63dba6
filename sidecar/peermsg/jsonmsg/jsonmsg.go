// Package jsonmsg is the framing group commit and bin leases share on peermsg: one kind byte,
// then one JSON object (docs/format/group-commit-messages.md, docs/format/bin-lease-messages.md),
// with a size bound and errors that name the field and what it accepts. Each protocol keeps its
// own types, kinds, bounds and rules; this package holds only what is the same.
package jsonmsg

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// FieldError is why a message was not accepted: the field and what it accepts. Field is a JSON
// name (a nested one dotted, "leases.job.inputs.path"), or "kind" (the first byte), "size" or
// "json" (the message as a whole).
type FieldError struct {
	Protocol string // "group commit", "bin lease": the error text's first words
	Message  string // which message: "request", "worker message", "job", ...
	Field    string
	Problem  string // what is wrong, with the value when it is short
	Want     string // what is accepted
	Err      error  // the cause, if any (the protocol's ErrTooLarge, a JSON error)
}

// Error says the protocol, the message, the field, what is wrong and what is accepted.
func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %s: %s: %s; want %s", e.Protocol, e.Message, e.Field, e.Problem, e.Want)
}

// Unwrap returns the cause, if any.
func (e *FieldError) Unwrap() error { return e.Err }

// Protocol is one protocol's framing: its name in errors and the bound of its messages.
type Protocol struct {
	Name string // the first words of every FieldError
	// MaxBytes bounds an encoded message, kind byte included, when encoding and decoding; 0:
	// no bound.
	MaxBytes int
	// ErrTooLarge is the cause of the FieldError of a message above MaxBytes.
	ErrTooLarge error
}

// Bad returns the FieldError maker of message, for its validation rules.
func (p Protocol) Bad(message string) func(field, problem, want string) error {
	return func(field, problem, want string) error {
		return &FieldError{Protocol: p.Name, Message: message, Field: field, Problem: problem, Want: want}
	}
}

// TooLarge is the error of message, n bytes encoded, above MaxBytes.
func (p Protocol) TooLarge(message string, n int) error {
	return &FieldError{Protocol: p.Name, Message: message, Field: "size", Problem: fmt.Sprintf("%d bytes encoded", n),
		Want: fmt.Sprintf("at most %d", p.MaxBytes), Err: p.ErrTooLarge}
}

// Encode returns kind followed by v's JSON, or TooLarge above MaxBytes.
func (p Protocol) Encode(kind byte, message string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", p.Name, message, err)
	}
	if p.MaxBytes > 0 && 1+len(body) > p.MaxBytes {
		return nil, p.TooLarge(message, 1+len(body))
	}
	return append([]byte{kind}, body...), nil
}

// Decode checks msg's size and kind byte and unmarshals the JSON after it into v; unknown
// fields are ignored. A JSON error names the field it met, when it can.
func (p Protocol) Decode(msg []byte, kind byte, message string, v any) error {
	if p.MaxBytes > 0 && len(msg) > p.MaxBytes {
		return p.TooLarge(message, len(msg))
	}
	if len(msg) == 0 || msg[0] != kind {
		got := "an empty message"
		if len(msg) > 0 {
			got = fmt.Sprintf("first byte %q", msg[0])
		}
		return p.Bad(message)("kind", got, fmt.Sprintf("first byte %q", kind))
	}
	if err := json.Unmarshal(msg[1:], v); err != nil {
		field := "json"
		var te *json.UnmarshalTypeError
		var b64 base64.CorruptInputError
		switch {
		case errors.As(err, &te) && te.Field != "":
			field = te.Field
		case errors.As(err, &b64):
			field = "files" // the one field of bytes in either protocol
		}
		return &FieldError{Protocol: p.Name, Message: message, Field: field, Problem: err.Error(),
			Want: "one JSON object of the documented fields", Err: err}
	}
	return nil
}

// Quote shows a value in an error, cut short: a refused message may be large.
func Quote(s string) string {
	const most = 64
	if len(s) > most {
		return strconv.Quote(s[:most]) + "..."
	}
	return strconv.Quote(s)
}
