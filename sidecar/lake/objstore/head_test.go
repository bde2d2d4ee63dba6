package objstore

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"

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
