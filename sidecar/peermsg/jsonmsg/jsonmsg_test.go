package jsonmsg

import (
	"errors"
	"strings"
	"testing"
)

var errBig = errors.New("too large")

type msg struct {
	V     int      `json:"v"`
	Files [][]byte `json:"files"`
	In    struct {
		N int `json:"n"`
	} `json:"in"`
}

// TestFraming: a message is its kind byte and JSON; each refusal names the protocol, the message,
// the field (the size, the kind byte, a nested JSON name dotted, the bytes field) and what is
// accepted; the bound holds both ways, and a protocol without one has none.
func TestFraming(t *testing.T) {
	p := Protocol{Name: "test proto", MaxBytes: 40, ErrTooLarge: errBig}
	b, err := p.Encode('T', "note", msg{V: 1})
	if err != nil || b[0] != 'T' || string(b[1:]) != `{"v":1,"files":null,"in":{"n":0}}` {
		t.Fatalf("encoded %q, %v", b, err)
	}
	if _, err := p.Encode('T', "note", msg{Files: [][]byte{make([]byte, 40)}}); !errors.Is(err, errBig) ||
		!strings.HasPrefix(err.Error(), "test proto note: size: ") {
		t.Fatalf("encoding above the bound: %v", err)
	}
	if _, err := (Protocol{Name: "test proto"}).Encode('T', "note", msg{Files: [][]byte{make([]byte, 40)}}); err != nil {
		t.Fatalf("no bound, yet: %v", err)
	}
	for _, c := range []struct {
		in, field, want string
	}{
		{strings.Repeat("x", 41), "size", "at most 40"},
		{"", "kind", `first byte 'T'`},
		{`X{}`, "kind", `first byte 'T'`},
		{`T{"in":{"n":"a"}}`, "in.n", "one JSON object of the documented fields"},
		{`T{"files":["%%"]}`, "files", "one JSON object of the documented fields"},
		{`T{`, "json", "one JSON object of the documented fields"},
	} {
		var m msg
		err := p.Decode([]byte(c.in), 'T', "note", &m)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || fe.Want != c.want || !strings.HasPrefix(err.Error(), "test proto note: "+c.field+": ") {
			t.Errorf("decode %.20q: %v, want field %s wanting %s", c.in, err, c.field, c.want)
		}
	}
	if got := Quote(strings.Repeat("a", 70)); got != `"`+strings.Repeat("a", 64)+`"...` {
		t.Errorf("quote: %s", got)
	}
}
