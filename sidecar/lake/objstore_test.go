package lake

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
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
	before := ObjectStoreCost(tbl)
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
	got := ObjectStoreCost(tbl).Sub(before)
	if p := got[OpPut]; p.Requests != 1 || p.BytesWritten != 300 || p.Errors != 0 {
		t.Errorf("put: %+v", p)
	}
	if g := got[OpGet]; g.Requests != 3 || g.Errors != 2 || g.BytesRead != 1000+3+5 {
		t.Errorf("get: %+v (want 3 requests, 2 errors, 1008 bytes)", g)
	}
}

func TestDataDirKeepsTheSchemeSlashes(t *testing.T) {
	for loc, want := range map[string]string{
		"s3://b/wh/siglake.db/events":  "s3://b/wh/siglake.db/events/data/timestamp_day=2026-01-02",
		"s3://b/wh/siglake.db/events/": "s3://b/wh/siglake.db/events/data/timestamp_day=2026-01-02",
		"file:///tmp/wh/siglake.db/ev": "file:///tmp/wh/siglake.db/ev/data/timestamp_day=2026-01-02",
	} {
		if got := dataDir(loc, "2026-01-02"); got != want {
			t.Errorf("DataDir(%q) = %q, want %q", loc, got, want)
		}
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
	before := ObjectStoreCost("resume_t")
	got, err := get()
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("two short reads: got %d bytes (%v), want the %d-byte object", len(got), err, len(payload))
	}
	cost := ObjectStoreCost("resume_t").Sub(before)
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
