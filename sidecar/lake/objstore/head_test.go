package objstore

import (
	"context"
	"errors"
	"io/fs"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siglake/siglake/test/testenv"
)

// TestLeanStatOnS3: on the test S3 server, the s3:// FileIO's Stat is one signed HEAD of its own
// for an object that is there (a key with '=' and a space, as partition paths and odd names
// have), with its size and time, and counted as a HEAD; a missing object and a directory still
// answer as iceberg-go's Stat does.
func TestLeanStatOnS3(t *testing.T) {
	s3 := testenv.S3(t)
	fio := s3.FileIO(t)
	hs, ok := fio.(headStatFS)
	if !ok {
		t.Fatalf("the S3 FileIO is a %T, want the lean-Stat FileIO", fio)
	}
	tbl := "lean_" + strings.ReplaceAll(strings.ToLower(s3.Prefix(t)[len("tests/"):]), "-", "_")
	dir := "s3://" + s3.Bucket + "/" + s3.Prefix(t) + "/siglake.db/" + tbl + "/data/timestamp_day=2026-12-03"
	obj := dir + "/g0000-a b+c.parquet"
	payload := []byte(strings.Repeat("x", 12345))
	if err := fio.(icebergio.WriteFileIO).WriteFile(obj, payload); err != nil {
		t.Fatal(err)
	}
	key, ok := hs.head.key(obj)
	if !ok {
		t.Fatalf("no key of %s in bucket %s", obj, hs.head.bucket)
	}
	direct, err := hs.head.stat(key)
	if err != nil || direct.Size() != int64(len(payload)) || direct.ModTime().IsZero() {
		t.Fatalf("the signed HEAD of %s: %v, %v; want %d bytes and a time", key, direct, err, len(payload))
	}
	before := CostOf(tbl)
	fi, err := fio.(icebergio.StatIO).Stat(obj)
	if err != nil || fi.Size() != int64(len(payload)) || fi.IsDir() || fi.Name() != "g0000-a b+c.parquet" {
		t.Fatalf("Stat %s: %v, %v", obj, fi, err)
	}
	if got := CostOf(tbl).Sub(before); got[OpHead].Requests != 1 || got.Total().Requests != 1 {
		t.Fatalf("one Stat cost %+v, want one HEAD", got)
	}
	if _, err := hs.head.stat(key + ".absent"); !errors.Is(err, errNotHere) {
		t.Fatalf("the signed HEAD of a missing key: %v, want errNotHere", err)
	}
	if _, err := fio.(icebergio.StatIO).Stat(obj + ".absent"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a missing object: %v, want fs.ErrNotExist", err)
	}
	if fi, err := fio.(icebergio.StatIO).Stat(dir + "/"); err != nil || !fi.IsDir() {
		t.Fatalf("Stat of the directory: %v, %v; want a directory", fi, err)
	}
}

// TestEscapeKey: keys are encoded as S3 signs them: every byte but A-Z a-z 0-9 - . _ ~ and '/'.
func TestEscapeKey(t *testing.T) {
	for in, want := range map[string]string{
		"data/timestamp_day=2026-12-03/g0000-x.parquet": "data/timestamp_day%3D2026-12-03/g0000-x.parquet",
		"a b+c~d_e.f":  "a%20b%2Bc~d_e.f",
		"ü/%":          "%C3%BC/%25",
		"plain/Key-09": "plain/Key-09",
	} {
		if got := escapeKey(in); got != want {
			t.Errorf("escapeKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLeanStatOnlyWithANamedEndpoint: the lean HEAD is used only where iceberg-go names the
// endpoint to the SDK too; otherwise (AWS's own resolution, compatibility mode, no credentials, a
// bucket virtual hosting cannot name) the plain FileIO's Stat is kept.
func TestLeanStatOnlyWithANamedEndpoint(t *testing.T) {
	t.Setenv("AWS_S3_ENDPOINT", "")
	cfg := &aws.Config{Region: "us-east-1", Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "k", SecretAccessKey: "s"}, nil
	})}
	for _, c := range []struct {
		name   string
		cfg    *aws.Config
		props  map[string]string
		bucket string
		path   bool // nil when false and want is false
		want   bool
	}{
		{"no endpoint: the SDK resolves it", cfg, map[string]string{}, "b", false, false},
		{"named endpoint: path style", cfg, map[string]string{icebergio.S3EndpointURL: "http://127.0.0.1:9000"}, "b", true, true},
		{"forced virtual", cfg, map[string]string{icebergio.S3EndpointURL: "https://s3.example", icebergio.S3ForceVirtualAddressing: "true"}, "b", false, true},
		{"forced virtual, dotted bucket", cfg, map[string]string{icebergio.S3EndpointURL: "https://s3.example", icebergio.S3ForceVirtualAddressing: "true"}, "a.b", false, false},
		{"compatibility mode", cfg, map[string]string{icebergio.S3EndpointURL: "https://storage.googleapis.com", icebergio.S3CompatMode: "true"}, "b", false, false},
		{"no credentials", &aws.Config{Region: "us-east-1"}, map[string]string{icebergio.S3EndpointURL: "http://127.0.0.1:9000"}, "b", false, false},
		{"endpoint with a path", cfg, map[string]string{icebergio.S3EndpointURL: "http://127.0.0.1:9000/s3"}, "b", false, false},
	} {
		h := newHeader(t.Context(), c.cfg, c.props, c.bucket)
		if (h != nil) != c.want || h != nil && h.pathStyle != c.path {
			t.Errorf("%s: header %+v, want lean %v (path style %v)", c.name, h, c.want, c.path)
		}
	}
}

// TestLeanStatReusesConnections: 50 Stats of an object go over one pooled connection, not a TCP
// connection each. A HEAD whose response is not drained and closed, or a test server that closes
// every connection (versitygw does unless started with --keep-alive), would make each check dial;
// at 1,000 pods that was half the group committer's CPU (docs/benchmarks.md).
func TestLeanStatReusesConnections(t *testing.T) {
	s3 := testenv.S3(t)
	fio := s3.FileIO(t)
	hs, ok := fio.(headStatFS)
	if !ok {
		t.Fatalf("the S3 FileIO is a %T, want the lean-Stat FileIO", fio)
	}
	obj := "s3://" + s3.Bucket + "/" + s3.Prefix(t) + "/data/reuse.parquet"
	if err := fio.(icebergio.WriteFileIO).WriteFile(obj, []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	var dialed, reused atomic.Int32
	hs.head.ctx = httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if i.Reused {
			reused.Add(1)
		} else {
			dialed.Add(1)
		}
	}})
	for i := 0; i < 50; i++ {
		if fi, err := hs.Stat(obj); err != nil || fi.Size() != 10 {
			t.Fatalf("Stat %s: %v, %v", obj, fi, err)
		}
	}
	if dialed.Load() > 1 || reused.Load() < 49 {
		t.Fatalf("50 Stats dialed %d connections and reused %d; want one connection reused", dialed.Load(), reused.Load())
	}
}
