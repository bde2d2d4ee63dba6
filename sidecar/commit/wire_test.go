package commit

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// request returns a valid batch request of stream s; id is made from n.
func request(n int, table, stream string, files int) Request {
	r := Request{V: Version, ID: testID(n), From: "pod-" + stream, Catalog: "9f2c4e0a1b7d3c5e8a6f0b2d",
		Table: table, Stream: stream, First: "1:10", Last: "1:12", Epoch: 3, Format: 2, SchemaID: 0, SpecID: 0,
		Rows: 100, Bytes: 4096, Segments: 3, WrittenMs: 1_700_000_000_000, ScanMs: 1_700_000_000_500, EveryMs: 10_000}
	for i := range files {
		r.Files = append(r.Files, []byte{byte(i + 1), 0xff, 0})
	}
	return r
}

func testID(n int) string {
	return strings.Repeat("0", 24) + strings.Repeat("0", 8-len(hex8(n))) + hex8(n)
}

func hex8(n int) string {
	const digits = "0123456789abcdef"
	out := ""
	for {
		out = string(digits[n%16]) + out
		n /= 16
		if n == 0 {
			return out
		}
	}
}

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range []Request{request(1, "events", "pod-0.abc", 3),
		{V: 1, ID: testID(2), From: "pod-1", Catalog: "c", Table: "events", Stream: "s", ScanMs: 5, PendingMs: 4, EveryMs: 10_000}} {
		msg, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if msg[0] != 'G' {
			t.Fatalf("kind byte %q, want 'G'", msg[0])
		}
		got, err := DecodeRequest(msg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
		}
	}
}

func TestAnswerRoundTrip(t *testing.T) {
	for _, a := range []Answer{
		{V: 1, ID: testID(1), Table: "events", Stream: "s", Kind: KindAck, Queue: 3, SlowMs: 2000, WaitMs: 4000},
		{V: 1, ID: testID(1), Table: "events", Stream: "s", Kind: KindDone, Outcome: OutcomeCommitted, Prev: "1:9", SnapshotID: 42},
		{V: 1, ID: testID(1), Table: "events", Stream: "s", Kind: KindDone, Outcome: OutcomeFailed, MaybeCommitted: true, Error: "conflict"},
		{V: 1, ID: testID(1), Table: "events", Stream: "s", Kind: KindNotOwner, Owner: "pod-7"},
		{V: 1, ID: testID(1), Kind: KindDone, Outcome: OutcomeRefused, Error: "group commit request: table: ..."},
	} {
		msg, err := a.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if msg[0] != 'A' {
			t.Fatalf("kind byte %q, want 'A'", msg[0])
		}
		got, err := DecodeAnswer(msg)
		if err != nil {
			t.Fatal(err)
		}
		if got != a {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, a)
		}
	}
}

// TestJSONNames pins the wire names docs/format/group-commit-messages.md documents.
func TestJSONNames(t *testing.T) {
	r := request(1, "events", "s", 1)
	r.PendingMs = 1
	msg, _ := r.Encode()
	for _, name := range strings.Fields("v id from cat table stream first last epoch fmt schema spec files rows bytes segs written_ms scan_ms pending_ms every_ms") {
		if !bytes.Contains(msg, []byte(`"`+name+`":`)) {
			t.Errorf("request has no %q: %s", name, msg)
		}
	}
	a := Answer{V: 1, ID: testID(1), Table: "t", Stream: "s", Kind: KindDone, Outcome: OutcomeFailed, MaybeCommitted: true,
		Prev: "1:1", SnapshotID: 1, Owner: "o", Queue: 1, SlowMs: 1, WaitMs: 1, IntervalMs: 1, Error: "e"}
	msg, _ = a.Encode()
	for _, name := range strings.Fields("v id table stream kind outcome maybe prev snapshot_id owner queue slow_ms wait_ms interval_ms error") {
		if !bytes.Contains(msg, []byte(`"`+name+`":`)) {
			t.Errorf("answer has no %q: %s", name, msg)
		}
	}
}

// TestNewerWriterFieldsIgnored: a reader takes the fields it knows.
func TestNewerWriterFieldsIgnored(t *testing.T) {
	msg, _ := request(1, "events", "s", 1).Encode()
	msg = append([]byte(`G{"later":{"x":[1,2]},`), msg[2:]...)
	if _, err := DecodeRequest(msg); err != nil {
		t.Fatal(err)
	}
}

func TestRequestRefused(t *testing.T) {
	for _, c := range []struct {
		field string
		edit  func(*Request)
	}{
		{"v", func(r *Request) { r.V = 2 }},
		{"v", func(r *Request) { r.V = 0 }},
		{"id", func(r *Request) { r.ID = "ABC" }},
		{"id", func(r *Request) { r.ID = strings.ToUpper(testID(10)) }},
		{"from", func(r *Request) { r.From = "" }},
		{"from", func(r *Request) { r.From = strings.Repeat("p", 256) }},
		{"cat", func(r *Request) { r.Catalog = "" }},
		{"table", func(r *Request) { r.Table = "Events" }},
		{"table", func(r *Request) { r.Table = "" }},
		{"stream", func(r *Request) { r.Stream = "../etc" }},
		{"stream", func(r *Request) { r.Stream = "" }},
		{"first", func(r *Request) { r.First = "1" }},
		{"first", func(r *Request) { r.First = "-1:2" }},
		{"first", func(r *Request) { r.First = "" }},
		{"last", func(r *Request) { r.Last = "1:x" }},
		{"last", func(r *Request) { r.Last = "" }},
		{"last", func(r *Request) { r.Last = "1:9" }}, // before first 1:10
		{"last", func(r *Request) { r.First, r.Last = "2:0", "1:99" }},
		{"files", func(r *Request) { r.Files = nil }},
		{"files", func(r *Request) { r.Files[1] = nil }},
		{"files", func(r *Request) { r.First, r.Last = "", "" }}, // a heartbeat carries no files
		{"fmt", func(r *Request) { r.Format = 0 }},
		{"fmt", func(r *Request) { r.Format = 4 }},
		{"schema", func(r *Request) { r.SpecID = -1 }},
		{"segs", func(r *Request) { r.Segments = 0 }},
		{"segs", func(r *Request) { r.Rows = -1 }},
		{"written_ms", func(r *Request) { r.WrittenMs = 0 }},
		{"scan_ms", func(r *Request) { r.EveryMs = -1 }},
	} {
		r := request(1, "events", "s", 2)
		c.edit(&r)
		_, err := r.Encode()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: Encode error %v, want one naming %q", r, err, c.field)
			continue
		}
		if fe.Want == "" || !strings.Contains(err.Error(), c.field+":") || !strings.Contains(err.Error(), "want ") {
			t.Errorf("error %q does not say the field and what is accepted", err)
		}
		// The receiving side refuses the same message.
		body, _ := encode(KindRequest, r)
		if _, err := DecodeRequest(body); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("DecodeRequest error %v, want one naming %q", err, c.field)
		}
	}
}

func TestDecodeRequestMessageErrors(t *testing.T) {
	good, _ := request(1, "events", "s", 1).Encode()
	for _, c := range []struct {
		field string
		msg   []byte
	}{
		{"kind", nil},
		{"kind", append([]byte{'A'}, good[1:]...)},
		{"json", []byte("G")},
		{"json", []byte("G{")},
		{"json", append(append([]byte{}, good...), " {}"...)}, // data after the object
		{"rows", []byte(`G{"v":1,"rows":"many"}`)},
		{"files", []byte(`G{"v":1,"files":["%%%"]}`)},
		{"size", append([]byte(`G{"pad":"`), bytes.Repeat([]byte("x"), MaxMessageBytes)...)},
	} {
		_, err := DecodeRequest(c.msg)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%.40q: error %v, want one naming %q", c.msg, err, c.field)
		}
	}
}

func TestEncodeTooLarge(t *testing.T) {
	r := request(1, "events", "s", 0)
	for len(r.Files)*3000 < MaxMessageBytes {
		r.Files = append(r.Files, bytes.Repeat([]byte{7}, 3000))
	}
	_, err := r.Encode()
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Encode of %d files of 3000 bytes: %v, want ErrTooLarge", len(r.Files), err)
	}
	r.Files = r.Files[:len(r.Files)/2]
	if _, err := r.Encode(); err != nil {
		t.Fatalf("half of it: %v", err)
	}
}

func TestAnswerRefused(t *testing.T) {
	ok := Answer{V: 1, ID: testID(1), Table: "events", Stream: "s", Kind: KindDone, Outcome: OutcomeCommitted, Prev: "1:2"}
	for _, c := range []struct {
		field string
		edit  func(*Answer)
	}{
		{"v", func(a *Answer) { a.V = 2 }},
		{"id", func(a *Answer) { a.ID = "x" }},
		{"table", func(a *Answer) { a.Table = "A" }},
		{"table", func(a *Answer) { a.Table = "" }}, // only a refusal may leave it empty
		{"stream", func(a *Answer) { a.Stream = "/" }},
		{"kind", func(a *Answer) { a.Kind = "maybe" }},
		{"outcome", func(a *Answer) { a.Outcome = "" }},
		{"outcome", func(a *Answer) { a.Outcome = "lost" }},
		{"outcome", func(a *Answer) { a.Kind = KindAck }},
		{"slow_ms", func(a *Answer) { a.Kind, a.Outcome, a.SlowMs = KindBusy, "", -1 }},
		{"wait_ms", func(a *Answer) { a.Kind, a.Outcome, a.WaitMs = KindAck, "", -1 }},
		{"interval_ms", func(a *Answer) { a.Kind, a.Outcome, a.IntervalMs = KindAck, "", -1 }},
		{"prev", func(a *Answer) { a.Prev = "1" }},
	} {
		a := ok
		c.edit(&a)
		_, err := a.Encode()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: error %v, want one naming %q", a, err, c.field)
		}
		body, _ := encode(KindAnswer, a)
		if _, err := DecodeAnswer(body); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("DecodeAnswer error %v, want one naming %q", err, c.field)
		}
	}
	if _, err := DecodeAnswer([]byte("G{}")); err == nil {
		t.Fatal("an answer decoded a request's kind byte")
	}
}

// fields are the names a FieldError may give.
var fields = map[string]bool{"kind": true, "size": true, "json": true}

func init() {
	for _, f := range strings.Fields("v id from cat table stream first last epoch fmt schema spec files rows bytes segs written_ms scan_ms pending_ms every_ms") {
		fields[f] = true
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, r := range []Request{request(1, "events", "pod-0", 2), {V: 1, ID: testID(2), From: "p", Catalog: "c", Table: "t", Stream: "s"}} {
		msg, _ := r.Encode()
		f.Add(msg)
	}
	f.Add([]byte(`G{"v":1,"id":"00000000000000000000000000000001","first":"1:2","last":"1:1"}`))
	f.Add([]byte(`G{"v":2}`))
	f.Add([]byte("A{}"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		r, err := DecodeRequest(msg)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || !fields[fe.Field] || fe.Want == "" {
				t.Fatalf("error %v does not name a field and what is accepted", err)
			}
			return
		}
		again, err := r.Encode()
		if errors.Is(err, ErrTooLarge) {
			return // escapes of from and cat may grow a message near the limit
		}
		if err != nil {
			t.Fatalf("a decoded request does not encode: %v", err)
		}
		back, err := DecodeRequest(again)
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("re-encoded request decodes to %+v, %v; want %+v", back, err, r)
		}
	})
}

// TestFormatDocInStep: docs/format/group-commit-messages.md has a row for every JSON field of both
// messages, in its section, and no row for a field they lack.
func TestFormatDocInStep(t *testing.T) {
	doc, err := os.ReadFile("../../docs/format/group-commit-messages.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	req, ans, _ := strings.Cut(text[strings.Index(text, "## Request"):], "## Answer")
	for _, c := range []struct {
		section string
		typ     reflect.Type
	}{{req, reflect.TypeFor[Request]()}, {ans, reflect.TypeFor[Answer]()}} {
		want := map[string]bool{}
		for f := range c.typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			want[name] = true
		}
		documented := map[string]bool{}
		for _, line := range strings.Split(c.section, "\n") {
			if !strings.HasPrefix(line, "| `") {
				continue
			}
			cell := strings.Split(line, "|")[1]
			for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(cell, -1) {
				documented[m[1]] = true
			}
		}
		for name := range want {
			if !documented[name] {
				t.Errorf("%s field %q has no row in docs/format/group-commit-messages.md", c.typ.Name(), name)
			}
		}
		for name := range documented {
			if !want[name] {
				t.Errorf("docs/format/group-commit-messages.md documents %s field %q, which the code lacks", c.typ.Name(), name)
			}
		}
	}
	if !strings.Contains(text, "| `G` (0x47) |") || !strings.Contains(text, "| `A` (0x41) |") || KindRequest != 'G' || KindAnswer != 'A' {
		t.Error("the kind bytes of the page and the code differ")
	}
}

// encode frames v without validating it: how the tests craft messages a sender would refuse.
func encode(kind byte, v any) ([]byte, error) { return answerWire.Encode(kind, "", v) }
