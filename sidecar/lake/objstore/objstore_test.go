package objstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siglake/siglake/test/faults"
	"github.com/siglake/siglake/test/testenv"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, target string
		rng            bool
		op             Op
		table          string
	}{
		{"GET", "/b/wh/siglake.db/events/data/x.parquet", false, OpGet, "events"},
		{"GET", "/b/wh/siglake.db/events/data/x.parquet", true, OpRangedGet, "events"},
		{"HEAD", "/b/wh/siglake.db/events/metadata/v1.json", false, OpHead, "events"},
		{"PUT", "/b/wh/siglake.db/events/data/x.parquet", false, OpPut, "events"},
		{"PUT", "/b/wh/siglake.db/events/data/x.parquet?partNumber=2&uploadId=u", false, OpMultipart, "events"},
		{"POST", "/b/wh/siglake.db/events/data/x.parquet?uploads", false, OpMultipart, "events"},
		{"POST", "/b/wh/siglake.db/events/data/x.parquet?uploadId=u", false, OpMultipart, "events"},
		{"DELETE", "/b/wh/siglake.db/events/data/x.parquet?uploadId=u", false, OpMultipart, "events"},
		{"DELETE", "/b/wh/siglake.db/logs/data/x.parquet", false, OpDelete, "logs"},
		{"POST", "/b?delete", false, OpDelete, ""},
		{"GET", "/b?list-type=2&prefix=wh%2Fsiglake.db%2Fevents%2Fdata%2F", false, OpList, "events"},
		{"GET", "/b?list-type=2&prefix=wh%2F", false, OpList, ""},
		{"GET", "/b/wh/siglake.db/x.json", false, OpGet, ""}, // a file directly under NS.db is no table
		{"PATCH", "/b/k", false, OpOther, ""},
	} {
		r := httptest.NewRequest(c.method, "http://127.0.0.1"+c.target, nil)
		if c.rng {
			r.Header.Set("Range", "bytes=0-99")
		}
		op, tbl := classify(r)
		if op != c.op || tbl != c.table {
			t.Errorf("%s %s range=%v: got %s/%q, want %s/%q", c.method, c.target, c.rng, op, tbl, c.op, c.table)
		}
	}
}

func TestCountingClientCountsBodiesAndErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case strings.HasSuffix(r.URL.Path, "/missing"):
			http.Error(w, "no", http.StatusNotFound)
		case strings.HasSuffix(r.URL.Path, "/broken"):
			http.Error(w, "down", http.StatusServiceUnavailable)
		default:
			w.Write([]byte(strings.Repeat("x", 1000)))
		}
	}))
	defer srv.Close()
	c := countingClient{inner: srv.Client()}
	tbl := "counting_client_t"
	before := CostOf(tbl)
	do := func(method, p, body string) {
		req, _ := http.NewRequest(method, srv.URL+"/b/w/ns.db/"+tbl+"/data/"+p, strings.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	do("PUT", "a", strings.Repeat("y", 300))
	do("GET", "a", "")
	do("GET", "missing", "")
	do("GET", "broken", "")
	got := CostOf(tbl).Sub(before)
	if p := got[OpPut]; p.Requests != 1 || p.BytesWritten != 300 || p.Errors != 0 {
		t.Errorf("put: %+v", p)
	}
	if g := got[OpGet]; g.Requests != 3 || g.Errors != 2 || g.BytesRead != 1000+3+5 {
		t.Errorf("get: %+v (want 3 requests, 2 errors, 1008 bytes)", g)
	}
}

// TestObjectStoreAccountingOnS3 runs the real S3 FileIO against versitygw and checks that each
// FileIO call shows up as the request kind a store bills, with the bytes that moved.
func TestObjectStoreAccountingOnS3(t *testing.T) {
	s3 := testenv.S3(t)
	fio := s3.FileIO(t)
	w, ok := fio.(icebergio.WriteFileIO)
	if !ok {
		t.Fatal("S3 FileIO cannot write")
	}
	tbl := "acct_" + strings.ReplaceAll(strings.ToLower(s3.Prefix(t)[len("tests/"):]), "-", "_")
	dir := "s3://" + s3.Bucket + "/" + s3.Prefix(t) + "/siglake.db/" + tbl
	obj := dir + "/data/f.bin"
	payload := []byte(strings.Repeat("0123456789", 10_000))

	before := CostOf(tbl)
	if err := w.WriteFile(obj, payload); err != nil {
		t.Fatal(err)
	}
	f, err := fio.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if _, err := f.ReadAt(buf, 5000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	all, err := fio.(icebergio.ReadFileIO).ReadFile(obj)
	if err != nil || len(all) != len(payload) {
		t.Fatalf("read back %d bytes, %v", len(all), err)
	}
	if _, err := fio.Open(dir + "/data/absent.bin"); err == nil {
		t.Fatal("opening a missing object succeeded")
	}
	n := 0
	if err := fio.(icebergio.ListableIO).WalkDir(dir+"/data", func(string, fs.DirEntry, error) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := fio.Remove(obj); err != nil {
		t.Fatal(err)
	}
	got := CostOf(tbl).Sub(before)
	t.Logf("cost: %+v", got)

	if p := got[OpPut]; p.Requests < 1 || p.BytesWritten < int64(len(payload)) {
		t.Errorf("write of %d bytes counted as %+v", len(payload), p)
	}
	if g := got[OpRangedGet]; g.Requests < 1 || g.BytesRead < 100 {
		t.Errorf("ranged read: %+v", g)
	}
	reads := got[OpGet].BytesRead + got[OpRangedGet].BytesRead
	if reads < int64(len(payload))+100 || reads > 3*int64(len(payload)) {
		t.Errorf("read %d + 100 bytes, counted %d", len(payload), reads)
	}
	if got[OpList].Requests < 1 {
		t.Errorf("walk counted no LIST: %+v", got)
	}
	if got[OpDelete].Requests < 1 {
		t.Errorf("remove counted no DELETE: %+v", got)
	}
	if got.Total().Errors < 1 {
		t.Errorf("the missing object's 404 was not counted: %+v", got)
	}

	// The same numbers reach the counters sidecar/instrument exports (TestObjectStoreCollector).
	var requests int64
	for _, n := range Counts() {
		if n.Table == tbl {
			requests += n.Requests
		}
	}
	if total := CostOf(tbl).Total().Requests; requests != total || requests < got.Total().Requests {
		t.Fatalf("Counts has %d requests of %s, CostOf %d", requests, tbl, total)
	}
}

// TestResumingBodyHidesShortReads: a GET body that breaks off is fetched again and spliced, and
// an object that changed in between is refused rather than spliced.
func TestResumingBodyHidesShortReads(t *testing.T) {
	payload := []byte(strings.Repeat("abcdefghij", 10_000))
	var served, breaks atomic.Int64
	etag := atomic.Value{}
	etag.Store(`"v1"`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("ETag", etag.Load().(string))
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		if breaks.Load() > 0 {
			breaks.Add(-1)
			w.Write(payload[:len(payload)/3])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		w.Write(payload)
	}))
	defer srv.Close()
	c := countingClient{inner: srv.Client()}
	get := func() ([]byte, error) {
		req, _ := http.NewRequest("GET", srv.URL+"/b/w/ns.db/resume_t/data/f", nil)
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}

	breaks.Store(2)
	before := CostOf("resume_t")
	got, err := get()
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("two short reads: got %d bytes (%v), want the %d-byte object", len(got), err, len(payload))
	}
	cost := CostOf("resume_t").Sub(before)
	if served.Load() != 3 || cost[OpGet].Requests != 3 || cost[OpGet].Errors != 2 {
		t.Fatalf("served %d, counted %+v; want 3 requests, 2 of them short", served.Load(), cost[OpGet])
	}

	breaks.Store(maxResumes + 1)
	if _, err := get(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a body that keeps breaking: err %v, want unexpected EOF after %d resumes", err, maxResumes)
	}

	breaks.Store(1)
	srvSwap := func() { etag.Store(`"v2"`) }
	req, _ := http.NewRequest("GET", srv.URL+"/b/w/ns.db/resume_t/data/f", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	srvSwap() // the object is replaced before the resume
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || !strings.Contains(err.Error(), "ETag") {
		t.Fatalf("resume across a changed object: err %v, want a refusal naming the ETag", err)
	}
}

// TestShortReadsOnS3 reads objects from versitygw through a proxy that truncates half the
// responses: every read returns the object's exact bytes.
func TestShortReadsOnS3(t *testing.T) {
	s3 := testenv.S3(t)
	proxy, err := faults.NewHTTPProxy(s3.Endpoint, faults.Config{FailRate: 0.5, Kinds: []faults.Kind{faults.Truncate}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	obj := "s3://" + s3.Bucket + "/" + s3.Prefix(t) + "/siglake.db/shortread/data/f.bin"
	payload := []byte(strings.Repeat("0123456789abcdef", 20_000))
	if err := s3.FileIO(t).(icebergio.WriteFileIO).WriteFile(obj, payload); err != nil {
		t.Fatal(err)
	}
	props := s3.Props()
	props[icebergio.S3EndpointURL] = proxy.URL
	fio, err := icebergio.LoadFS(t.Context(), props, obj)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		got, err := fio.(icebergio.ReadFileIO).ReadFile(obj)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("read %d: %d bytes, %v", i, len(got), err)
		}
		f, err := fio.Open(obj)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 50_000)
		if _, err := f.ReadAt(buf, 100_000); err != nil || !bytes.Equal(buf, payload[100_000:150_000]) {
			t.Fatalf("ranged read %d: %v", i, err)
		}
		f.Close()
	}
	if proxy.Counts()[faults.Truncate] < 5 {
		t.Fatalf("proxy truncated only %v responses", proxy.Counts())
	}
	t.Logf("proxy: %v", proxy.Counts())
}

// TestS3AttemptsPerRequest: the S3 client sends a failing request DefaultS3MaxAttempts times.
// It waits out the SDK's backoff (about half a minute), so it runs beside the other tests.
func TestS3AttemptsPerRequest(t *testing.T) {
	t.Parallel()
	s3 := testenv.S3(t)
	proxy, err := faults.NewHTTPProxy(s3.Endpoint, faults.Config{FailRate: 1, Kinds: []faults.Kind{faults.Status503}})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	props := s3.Props()
	props[icebergio.S3EndpointURL] = proxy.URL
	obj := "s3://" + s3.Bucket + "/" + s3.Prefix(t) + "/never.bin"
	fio, err := icebergio.LoadFS(t.Context(), props, obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fio.(icebergio.ReadFileIO).ReadFile(obj); err == nil {
		t.Fatal("a read through a store answering 503 succeeded")
	}
	if n := proxy.Counts()[faults.Status503]; n != DefaultS3MaxAttempts {
		t.Fatalf("the client sent the request %d times, want %d", n, DefaultS3MaxAttempts)
	}
}

// TestS3ConfigResolvedOnce: FileIOs of the same S3 properties and environment share one resolved
// AWS config (iceberg-go opens one per table load and commit, with the table's properties, which
// change every commit); other S3 properties, or another AWS_* variable, resolve their own. Every FileIO still reads through the counting client.
func TestS3ConfigResolvedOnce(t *testing.T) {
	s3 := testenv.S3(t)
	var parsed atomic.Int32
	orig := parseAWSConfig
	parseAWSConfig = func(ctx context.Context, props map[string]string) (*aws.Config, error) {
		parsed.Add(1)
		return orig(ctx, props)
	}
	defer func() { parseAWSConfig = orig }()
	obj := "s3://" + s3.Bucket + "/" + s3.Prefix(t) + "/once.bin"
	props := s3.Props()
	props["s3.siglake-test"] = t.Name() // a key no other test's FileIO has
	before := Counts()
	for i := 0; i < 3; i++ {
		props["siglake.mark.pod-0"] = strconv.Itoa(i) // a table's properties change with every commit
		fio, err := icebergio.LoadFS(t.Context(), props, obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fio.(icebergio.ReadFileIO).ReadFile(obj); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("read of a missing object: %v, want not found", err)
		}
	}
	if n := parsed.Load(); n != 1 {
		t.Fatalf("3 FileIOs of the same properties resolved %d AWS configs, want 1", n)
	}
	if requests(Counts())-requests(before) < 3 {
		t.Fatal("the reads were not counted")
	}
	props["s3.connect-timeout"] = "30"
	if _, err := icebergio.LoadFS(t.Context(), props, obj); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_MAX_ATTEMPTS", "2")
	if _, err := icebergio.LoadFS(t.Context(), props, obj); err != nil {
		t.Fatal(err)
	}
	if n := parsed.Load(); n != 3 {
		t.Fatalf("%d AWS configs resolved, want 3: other properties and another environment resolve anew", n)
	}
}

func requests(cs []Count) (n int64) {
	for _, c := range cs {
		n += c.Requests
	}
	return n
}
