package lake_test

// The tests against the test S3 server live outside package lake: testenv imports lake.

import (
	"bytes"
	"io/fs"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/test/faults"
	"github.com/siglake/siglake/test/testenv"
)

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

	before := lake.ObjectStoreCost(tbl)
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
	got := lake.ObjectStoreCost(tbl).Sub(before)
	t.Logf("cost: %+v", got)

	if p := got[lake.OpPut]; p.Requests < 1 || p.BytesWritten < int64(len(payload)) {
		t.Errorf("write of %d bytes counted as %+v", len(payload), p)
	}
	if g := got[lake.OpRangedGet]; g.Requests < 1 || g.BytesRead < 100 {
		t.Errorf("ranged read: %+v", g)
	}
	reads := got[lake.OpGet].BytesRead + got[lake.OpRangedGet].BytesRead
	if reads < int64(len(payload))+100 || reads > 3*int64(len(payload)) {
		t.Errorf("read %d + 100 bytes, counted %d", len(payload), reads)
	}
	if got[lake.OpList].Requests < 1 {
		t.Errorf("walk counted no LIST: %+v", got)
	}
	if got[lake.OpDelete].Requests < 1 {
		t.Errorf("remove counted no DELETE: %+v", got)
	}
	if got.Total().Errors < 1 {
		t.Errorf("the missing object's 404 was not counted: %+v", got)
	}

	// The same numbers reach Prometheus.
	reg := prometheus.NewRegistry()
	reg.MustRegister(lake.ObjectStoreCollector())
	if n, err := testutil.GatherAndCount(reg, "siglake_objstore_requests_total"); err != nil || n == 0 {
		t.Fatalf("collector exported %d request series (%v)", n, err)
	}
	if err := testutil.CollectAndCompare(lake.ObjectStoreCollector(), strings.NewReader(""), "siglake_objstore_nothing"); err != nil {
		t.Fatal(err)
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

// TestS3AttemptsPerRequest: the S3 client sends a failing request lake.DefaultS3MaxAttempts times.
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
	if n := proxy.Counts()[faults.Status503]; n != lake.DefaultS3MaxAttempts {
		t.Fatalf("the client sent the request %d times, want %d", n, lake.DefaultS3MaxAttempts)
	}
}
