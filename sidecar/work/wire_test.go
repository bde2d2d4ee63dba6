package work

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/folding"
)

const testCatalog = "9f2c4e0a1b7d3c5e8a6f0b2d"

// job returns a valid l0 job over n inputs named from name.
func job(name string, n int, size int64) Job {
	j := Job{Kind: "l0", Partition: "2026-12-04", Dir: "s3://wh/events/data/day=2026-12-04",
		TargetFileBytes: 64 << 20, SplitSparse: 0.25,
		Metadata: Metadata{GroupColumns: []string{"service"}, RawColumn: "raw", IndexColumns: []string{"trace_id"}, FooterMaxBytes: 1 << 20}}
	for i := range n {
		j.Inputs = append(j.Inputs, Input{Path: fmt.Sprintf("%s/%s-%d.parquet", j.Dir, name, i), Size: size, Rows: 1000, Generation: i % 3})
		j.Generation = max(j.Generation, i%3+1)
	}
	return j
}

func testLeaseID(n int) string { return fmt.Sprintf("%032x", n) }

func want() WorkerMessage {
	return WorkerMessage{V: 1, Type: TypeWant, From: "ingest-2", Catalog: testCatalog, FreeBytes: 2 << 30, MergeBytes: 512 << 20}
}

func result() WorkerMessage {
	return WorkerMessage{V: 1, Type: TypeResult, From: "ingest-2", Catalog: testCatalog, Lease: testLeaseID(7), Status: StatusMerged,
		Files: [][]byte{{1, 2, 3}, {4}}, BytesRead: 100, BytesWritten: 90, SplicedBytes: 10, TookMs: 1234}
}

func leases() OwnerMessage {
	return OwnerMessage{V: 1, Type: TypeLeases, Catalog: testCatalog, RetryMs: 5000,
		Leases: []Grant{{ID: testLeaseID(1), Table: "events", Job: job("a", 3, 100), DurationMs: 120_000},
			{ID: testLeaseID(2), Table: "events_1m", Job: job("b", 1, 100), DurationMs: 1}}}
}

func TestWorkerMessageRoundTrip(t *testing.T) {
	failed := result()
	failed.Status, failed.Files, failed.Error = StatusFailed, nil, "merge: read s3://...: 503"
	for _, m := range []WorkerMessage{want(), result(), failed,
		{V: 1, Type: TypeWant, From: "p", Catalog: "c", MergeBytes: 1, MaxBinBytes: 7},
		{V: 1, Type: TypeRenew, From: "p", Catalog: "c", Lease: testLeaseID(3)}} {
		msg, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if msg[0] != 'W' {
			t.Fatalf("kind byte %q, want 'W'", msg[0])
		}
		got, err := DecodeWorker(msg, m.From)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
		}
	}
}

func testFold() *Fold {
	return FoldOf(folding.Fold{Keys: []string{"service", "severity"}, Bucket: 60e6, MaxGroups: 1000,
		Aggregates: []folding.Aggregate{{Column: "events", Func: folding.AggCount}, {Column: "bytes", Func: folding.AggSum}},
		Tiers:      []folding.FoldTier{{Before: 1_764_000_000_000_000, Bucket: 3600e6}}})
}

func TestOwnerMessageRoundTrip(t *testing.T) {
	fold := leases()
	fold.Leases[1].Job.Fold, fold.Leases[1].Job.FoldTier, fold.Leases[1].Job.Kind = testFold(), 2, "fold"
	fold.Leases[1].Job.Reason = "fold: 12 unfolded files"
	for _, m := range []OwnerMessage{leases(), fold,
		{V: 1, Type: TypeLeases, Catalog: testCatalog, RetryMs: 10_000},
		{V: 1, Type: TypeAnswer, Lease: testLeaseID(9), Outcome: OutcomeCommitted},
		{V: 1, Type: TypeAnswer, Lease: testLeaseID(9), Outcome: OutcomeExpired, Error: "lease is not live"}} {
		msg, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if msg[0] != 'L' {
			t.Fatalf("kind byte %q, want 'L'", msg[0])
		}
		got, err := DecodeOwner(msg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
		}
	}
}

// TestMetadataCarriesEveryOption: the wire's metadata and merge's options convert both ways
// without loss (a field merge adds does not compile in MetadataOf until the format has it).
func TestMetadataCarriesEveryOption(t *testing.T) {
	o := merge.MetadataOptions{GroupColumns: []string{"service", "host"}, RawColumn: "body", IndexColumns: []string{"trace_id"},
		InvertedIndexOff: true, FooterMaxBytes: 77, IndexAtFlush: true}
	j := job("m", 1, 1)
	j.Metadata = MetadataOf(o)
	msg, err := OwnerMessage{V: 1, Type: TypeLeases, Catalog: "c", Leases: []Grant{{ID: testLeaseID(1), Table: "t", Job: j, DurationMs: 1}}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeOwner(msg)
	if err != nil {
		t.Fatal(err)
	}
	if back := got.Leases[0].Job.Metadata.Options(); !reflect.DeepEqual(back, o) {
		t.Fatalf("metadata options after the wire: %+v, want %+v", back, o)
	}
}

// TestFoldCarriesTheFolding: a fold survives the wire whole, every field of folding.Fold set.
func TestFoldCarriesTheFolding(t *testing.T) {
	f := folding.Fold{Keys: []string{"service"}, Bucket: 60e6, MaxGroups: 7,
		Aggregates: []folding.Aggregate{{Column: "n", Func: folding.AggCount}, {Column: "hi", Func: folding.AggMax}},
		Tiers:      []folding.FoldTier{{Before: 100, Bucket: 3600e6}, {Before: 50, Bucket: 86400e6}}}
	v := reflect.ValueOf(f)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("folding.Fold field %s is not set in the test", v.Type().Field(i).Name)
		}
	}
	j := job("f", 2, 1)
	j.Fold, j.FoldTier = FoldOf(f), 1
	msg, err := OwnerMessage{V: 1, Type: TypeLeases, Catalog: "c", Leases: []Grant{{ID: testLeaseID(1), Table: "t", Job: j, DurationMs: 1}}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeOwner(msg)
	if err != nil {
		t.Fatal(err)
	}
	if back := got.Leases[0].Job.Fold.Folding(); !reflect.DeepEqual(back, f) {
		t.Fatalf("fold after the wire: %+v, want %+v", back, f)
	}
}

// jsonNames returns the JSON names of typ's fields, nested ones dotted (a.b), as FieldError
// names them.
func jsonNames(typ reflect.Type, prefix string, into map[string]bool) map[string]bool {
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		into[prefix+name] = true
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			jsonNames(ft, prefix+name+".", into)
		}
	}
	return into
}

// TestJSONNames pins the wire names docs/format/bin-lease-messages.md documents.
func TestJSONNames(t *testing.T) {
	w := result()
	w.Error = "e"
	msg, _ := w.Encode()
	for _, name := range strings.Fields("v type from cat lease status files bytes_read bytes_written spliced_bytes took_ms error") {
		if !bytes.Contains(msg, []byte(`"`+name+`":`)) {
			t.Errorf("result has no %q: %s", name, msg)
		}
	}
	msg, _ = WorkerMessage{V: 1, Type: TypeWant, From: "p", Catalog: "c", FreeBytes: 1, MergeBytes: 1, MaxBinBytes: 1}.Encode()
	for _, name := range strings.Fields("free_bytes merge_bytes max_bin_bytes") {
		if !bytes.Contains(msg, []byte(`"`+name+`":`)) {
			t.Errorf("want has no %q: %s", name, msg)
		}
	}
	withFold := leases()
	withFold.Leases[0].Job.Fold, withFold.Leases[0].Job.Reason = testFold(), "r"
	msg, _ = withFold.Encode()
	for _, name := range strings.Fields("v type cat leases retry_ms id table job duration_ms kind partition inputs path size rows generation dir " +
		"target_file_bytes split_sparse metadata group_columns raw_column index_columns inverted_index_off footer_max_bytes index_at_flush fold fold_tier " +
		"keys aggregates column func bucket_us tiers before_us max_groups reason") {
		if !bytes.Contains(msg, []byte(`"`+name+`":`)) {
			t.Errorf("leases has no %q: %s", name, msg)
		}
	}
	msg, _ = OwnerMessage{V: 1, Type: TypeAnswer, Lease: testLeaseID(1), Outcome: OutcomeFailed, Error: "x"}.Encode()
	for _, name := range strings.Fields("v type lease outcome error") {
		if !bytes.Contains(msg, []byte(`"`+name+`":`)) {
			t.Errorf("answer has no %q: %s", name, msg)
		}
	}
}

// TestNewerWriterFieldsIgnored: a reader takes the fields it knows.
func TestNewerWriterFieldsIgnored(t *testing.T) {
	msg, _ := want().Encode()
	msg = append([]byte(`W{"later":{"x":[1,2]},`), msg[2:]...)
	if _, err := DecodeWorker(msg, "ingest-2"); err != nil {
		t.Fatal(err)
	}
	msg, _ = leases().Encode()
	msg = bytes.Replace(msg, []byte(`"job":{`), []byte(`"job":{"later":true,`), 1)
	if _, err := DecodeOwner(msg); err != nil {
		t.Fatal(err)
	}
}

// checkRefused encodes a broken message and decodes its bytes, both of which must name field.
func checkRefused(t *testing.T, field string, encodeErr error, decode func() error) {
	t.Helper()
	var fe *FieldError
	if !errors.As(encodeErr, &fe) || fe.Field != field {
		t.Errorf("Encode error %v, want one naming %q", encodeErr, field)
		return
	}
	if fe.Want == "" || !strings.Contains(encodeErr.Error(), field+":") || !strings.Contains(encodeErr.Error(), "want ") {
		t.Errorf("error %q does not say the field and what is accepted", encodeErr)
	}
	if err := decode(); !errors.As(err, &fe) || fe.Field != field {
		t.Errorf("decode error %v, want one naming %q", err, field)
	}
}

func TestWorkerMessageRefused(t *testing.T) {
	for _, c := range []struct {
		field string
		base  func() WorkerMessage
		edit  func(*WorkerMessage)
	}{
		{"v", want, func(m *WorkerMessage) { m.V = 2 }},
		{"type", want, func(m *WorkerMessage) { m.Type = "gimme" }},
		{"from", want, func(m *WorkerMessage) { m.From = "" }},
		{"from", want, func(m *WorkerMessage) { m.From = strings.Repeat("p", 256) }},
		{"cat", want, func(m *WorkerMessage) { m.Catalog = "" }},
		{"merge_bytes", want, func(m *WorkerMessage) { m.MergeBytes = 0 }},
		{"free_bytes", want, func(m *WorkerMessage) { m.FreeBytes = -1 }},
		{"free_bytes", want, func(m *WorkerMessage) { m.MaxBinBytes = -1 }},
		{"lease", want, func(m *WorkerMessage) { m.Lease = testLeaseID(1) }},
		{"status", want, func(m *WorkerMessage) { m.Status = StatusMerged }},
		{"lease", want, func(m *WorkerMessage) { m.Type, m.MergeBytes, m.Lease = TypeRenew, 0, "ABC" }},
		{"status", want, func(m *WorkerMessage) { m.Type, m.MergeBytes, m.Lease, m.Error = TypeRenew, 0, testLeaseID(1), "x" }},
		{"lease", result, func(m *WorkerMessage) { m.Lease = strings.ToUpper(testLeaseID(10)) }},
		{"status", result, func(m *WorkerMessage) { m.Status = "done" }},
		{"files", result, func(m *WorkerMessage) { m.Files = nil }},
		{"files", result, func(m *WorkerMessage) { m.Files[1] = nil }},
		{"files", result, func(m *WorkerMessage) { m.Status, m.Error = StatusFailed, "x" }},
		{"error", result, func(m *WorkerMessage) { m.Status, m.Files = StatusFailed, nil }},
		{"error", result, func(m *WorkerMessage) { m.Error = strings.Repeat("e", maxErrorBytes+1) }},
		{"bytes_read", result, func(m *WorkerMessage) { m.TookMs = -1 }},
		{"free_bytes", result, func(m *WorkerMessage) { m.MergeBytes = 1 }},
	} {
		m := c.base()
		c.edit(&m)
		_, err := m.Encode()
		checkRefused(t, c.field, err, func() error {
			body, _ := wire.Encode(KindWorker, "worker message", m)
			_, err := DecodeWorker(body, m.From)
			return err
		})
	}
}

// TestWorkerNamedByEnvelope: the body's from must be the envelope's sender.
func TestWorkerNamedByEnvelope(t *testing.T) {
	msg, _ := want().Encode()
	_, err := DecodeWorker(msg, "ingest-3")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "from" {
		t.Fatalf("a want from ingest-2 sent by ingest-3: %v, want a refusal naming from", err)
	}
}

func TestOwnerMessageRefused(t *testing.T) {
	answer := func() OwnerMessage {
		return OwnerMessage{V: 1, Type: TypeAnswer, Lease: testLeaseID(4), Outcome: OutcomeConflict}
	}
	for _, c := range []struct {
		field string
		base  func() OwnerMessage
		edit  func(*OwnerMessage)
	}{
		{"v", leases, func(m *OwnerMessage) { m.V = 0 }},
		{"type", leases, func(m *OwnerMessage) { m.Type = "" }},
		{"cat", leases, func(m *OwnerMessage) { m.Catalog = "" }},
		{"retry_ms", leases, func(m *OwnerMessage) { m.RetryMs = -1 }},
		{"outcome", leases, func(m *OwnerMessage) { m.Outcome = OutcomeCommitted }},
		{"leases.id", leases, func(m *OwnerMessage) { m.Leases[1].ID = "x" }},
		{"leases.id", leases, func(m *OwnerMessage) { m.Leases[1].ID = m.Leases[0].ID }},
		{"leases.table", leases, func(m *OwnerMessage) { m.Leases[0].Table = "Events" }},
		{"leases.duration_ms", leases, func(m *OwnerMessage) { m.Leases[0].DurationMs = 0 }},
		{"leases.job.generation", leases, func(m *OwnerMessage) { m.Leases[0].Job.Generation = 2 }},
		{"error", answer, func(m *OwnerMessage) { m.Error = strings.Repeat("e", maxErrorBytes+1) }},
		{"lease", answer, func(m *OwnerMessage) { m.Lease = "" }},
		{"outcome", answer, func(m *OwnerMessage) { m.Outcome = "merged" }},
		{"leases", answer, func(m *OwnerMessage) { m.RetryMs = 1 }},
	} {
		m := c.base()
		c.edit(&m)
		_, err := m.Encode()
		checkRefused(t, c.field, err, func() error {
			body, _ := wire.Encode(KindOwner, "owner message", m)
			_, err := DecodeOwner(body)
			return err
		})
	}
}

func TestJobRefused(t *testing.T) {
	for _, c := range []struct {
		field string
		edit  func(*Job)
	}{
		{"kind", func(j *Job) { j.Kind = "" }},
		{"kind", func(j *Job) { j.Kind = "L0" }},
		{"kind", func(j *Job) { j.Kind = "delete-task" }},
		{"kind", func(j *Job) { j.Kind = "retention" }},
		{"partition", func(j *Job) { j.Partition = "2026-13-01" }},
		{"partition", func(j *Job) { j.Partition = "" }},
		{"dir", func(j *Job) { j.Dir = "" }},
		{"target_file_bytes", func(j *Job) { j.TargetFileBytes = -1 }},
		{"split_sparse", func(j *Job) { j.SplitSparse = -0.5 }},
		{"fold_tier", func(j *Job) { j.FoldTier = 1 }}, // without fold
		{"fold_tier", func(j *Job) { j.Fold, j.FoldTier = testFold(), -1 }},
		{"reason", func(j *Job) { j.Reason = strings.Repeat("r", maxErrorBytes+1) }},
		{"fold.bucket_us", func(j *Job) { j.Fold = testFold(); j.Fold.BucketUs = 0 }},
		{"fold.max_groups", func(j *Job) { j.Fold = testFold(); j.Fold.MaxGroups = -1 }},
		{"fold.aggregates", func(j *Job) { j.Fold = testFold(); j.Fold.Aggregates = nil }},
		{"fold.keys", func(j *Job) { j.Fold = testFold(); j.Fold.Keys[1] = "" }},
		{"fold.aggregates.column", func(j *Job) { j.Fold = testFold(); j.Fold.Aggregates[1].Column = "" }},
		{"fold.aggregates.func", func(j *Job) { j.Fold = testFold(); j.Fold.Aggregates[0].Func = "avg" }},
		{"fold.tiers.bucket_us", func(j *Job) { j.Fold = testFold(); j.Fold.Tiers[0].BucketUs = 0 }},
		{"inputs", func(j *Job) { j.Inputs = nil }},
		{"inputs.path", func(j *Job) { j.Inputs[1].Path = "" }},
		{"inputs.path", func(j *Job) { j.Inputs[1].Path = j.Inputs[0].Path }},
		{"inputs.size", func(j *Job) { j.Inputs[0].Rows = -1 }},
		{"inputs.size", func(j *Job) { j.Inputs[0].Generation = -1 }},
		{"generation", func(j *Job) { j.Generation = 0 }},
		{"generation", func(j *Job) { j.Generation = 4 }}, // newest input is generation 2
		{"metadata.group_columns", func(j *Job) { j.Metadata.GroupColumns = []string{""} }},
		{"metadata.index_columns", func(j *Job) { j.Metadata.IndexColumns = []string{strings.Repeat("c", 256)} }},
		{"metadata.raw_column", func(j *Job) { j.Metadata.RawColumn = strings.Repeat("c", 256) }},
		{"metadata.footer_max_bytes", func(j *Job) { j.Metadata.FooterMaxBytes = -1 }},
	} {
		j := job("a", 3, 10)
		c.edit(&j)
		err := j.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || fe.Want == "" {
			t.Errorf("%s: Validate error %v, want one naming %q and what it accepts", c.field, err, c.field)
		}
	}
	if err := job("a", 3, 10).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeMessageErrors(t *testing.T) {
	good, _ := want().Encode()
	for _, c := range []struct {
		field string
		msg   []byte
	}{
		{"kind", nil},
		{"kind", append([]byte{'L'}, good[1:]...)},
		{"json", []byte("W")},
		{"json", []byte("W{")},
		{"json", append(append([]byte{}, good...), " {}"...)}, // data after the object
		{"free_bytes", []byte(`W{"v":1,"free_bytes":"lots"}`)},
		{"files", []byte(`W{"v":1,"files":["%%%"]}`)},
		{"size", append([]byte(`W{"pad":"`), bytes.Repeat([]byte("x"), MaxMessageBytes)...)},
	} {
		_, err := DecodeWorker(c.msg, "ingest-2")
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%.40q: error %v, want one naming %q", c.msg, err, c.field)
		}
	}
	_, err := DecodeOwner([]byte(`L{"v":1,"type":"leases","leases":[{"job":{"inputs":[{"size":"big"}]}}]}`))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "leases.job.inputs.size" {
		t.Errorf("a string size: %v, want an error naming leases.job.inputs.size", err)
	}
}

func TestEncodeTooLarge(t *testing.T) {
	m := result()
	for len(m.Files)*3000 < MaxMessageBytes {
		m.Files = append(m.Files, bytes.Repeat([]byte{7}, 3000))
	}
	if _, err := m.Encode(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Encode of %d files of 3000 bytes: %v, want ErrTooLarge", len(m.Files), err)
	}
	m.Files = m.Files[:len(m.Files)/2]
	if _, err := m.Encode(); err != nil {
		t.Fatalf("half of it: %v", err)
	}
}

// fieldNames are the names a FieldError may give.
func fieldNames() map[string]bool {
	names := map[string]bool{"kind": true, "size": true, "json": true}
	jsonNames(reflect.TypeFor[WorkerMessage](), "", names)
	jsonNames(reflect.TypeFor[OwnerMessage](), "", names)
	return names
}

// FuzzDecode: no input panics either decoder, every refusal names a field and what it accepts,
// and what decodes encodes to a message that decodes and encodes to the same bytes (an empty
// list and an absent one are the same message).
func FuzzDecode(f *testing.F) {
	for _, m := range []WorkerMessage{want(), result()} {
		msg, _ := m.Encode()
		f.Add(msg)
	}
	withFold := leases()
	withFold.Leases[0].Job.Fold, withFold.Leases[0].Job.FoldTier = testFold(), 1
	for _, m := range []OwnerMessage{leases(), withFold, {V: 1, Type: TypeAnswer, Lease: testLeaseID(1), Outcome: OutcomeExpired}} {
		msg, _ := m.Encode()
		f.Add(msg)
	}
	f.Add([]byte(`W{"v":1,"type":"renew","from":"ingest-2","cat":"c","lease":"00000000000000000000000000000001"}`))
	f.Add([]byte(`L{"v":1,"type":"leases","cat":"c","leases":[{"id":"x","job":{"inputs":[{}]}}]}`))
	f.Add([]byte(`W{"v":2}`))
	names := fieldNames()
	f.Fuzz(func(t *testing.T, msg []byte) {
		checkErr := func(err error) {
			var fe *FieldError
			if !errors.As(err, &fe) || !names[fe.Field] || fe.Want == "" {
				t.Fatalf("error %v does not name a field and what is accepted", err)
			}
		}
		if w, err := DecodeWorker(msg, "ingest-2"); err != nil {
			checkErr(err)
		} else if again, err := w.Encode(); !errors.Is(err, ErrTooLarge) {
			back, err2 := DecodeWorker(again, "ingest-2")
			third, _ := back.Encode()
			if err != nil || err2 != nil || !bytes.Equal(third, again) {
				t.Fatalf("re-encoded worker message decodes to %+v, %v, %v; want %+v", back, err, err2, w)
			}
		}
		if o, err := DecodeOwner(msg); err != nil {
			checkErr(err)
		} else if again, err := o.Encode(); !errors.Is(err, ErrTooLarge) {
			back, err2 := DecodeOwner(again)
			third, _ := back.Encode()
			if err != nil || err2 != nil || !bytes.Equal(third, again) {
				t.Fatalf("re-encoded owner message decodes to %+v, %v, %v; want %+v", back, err, err2, o)
			}
		}
	})
}
