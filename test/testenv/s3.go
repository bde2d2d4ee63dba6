package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers the s3:// FileIO
)

// S3Env describes the test S3 server (versitygw on 127.0.0.1, POSIX backend).
type S3Env struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Bucket    string
	Region    string
	// Root is the server's POSIX root directory: object KEY of bucket B is the file
	// Root/B/KEY, so DuckDB (which has no S3 access offline) reads objects there.
	Root string
}

// S3 returns the test S3 server, after checking that it accepts connections.
func S3(t testing.TB) S3Env {
	t.Helper()
	e := S3Env{
		Endpoint:  lookup("SIGLAKE_TEST_S3_ENDPOINT"),
		AccessKey: lookup("SIGLAKE_TEST_S3_ACCESS_KEY"),
		SecretKey: lookup("SIGLAKE_TEST_S3_SECRET_KEY"),
		Bucket:    lookup("SIGLAKE_TEST_S3_BUCKET"),
		Region:    lookup("SIGLAKE_TEST_S3_REGION"),
		Root:      lookup("SIGLAKE_TEST_S3_ROOT"),
	}
	if e.Region == "" {
		e.Region = "us-east-1"
	}
	if e.Endpoint == "" || e.AccessKey == "" || e.SecretKey == "" || e.Bucket == "" {
		unavailable(t, "S3: SIGLAKE_TEST_S3_ENDPOINT/_ACCESS_KEY/_SECRET_KEY/_BUCKET not set and no versitygw.env under %q (scripts/versitygw.sh start)", StateDir())
		return S3Env{}
	}
	u, err := url.Parse(e.Endpoint)
	if err != nil || u.Host == "" {
		t.Fatalf("SIGLAKE_TEST_S3_ENDPOINT %q is not a URL: %v", e.Endpoint, err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		unavailable(t, "S3 at %s: %v (scripts/versitygw.sh start)", e.Endpoint, err)
		return S3Env{}
	}
	conn.Close()
	return e
}

// Props are the iceberg-go FileIO properties for this server. Catalog properties take
// the same keys (a catalog hands them to the FileIO of every table it loads).
// Path-style addressing: iceberg-go already defaults to it when s3.endpoint is set;
// it is stated here so a reader need not know that.
func (e S3Env) Props() map[string]string {
	return map[string]string{
		icebergio.S3EndpointURL:            e.Endpoint,
		icebergio.S3AccessKeyID:            e.AccessKey,
		icebergio.S3SecretAccessKey:        e.SecretKey,
		icebergio.S3Region:                 e.Region,
		icebergio.S3ForceVirtualAddressing: "false",
	}
}

// Prefix returns a fresh key prefix ("tests/<test name>-<random>") so tests sharing
// the bucket never see each other's objects.
func (e S3Env) Prefix(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return "tests/" + name + "-" + hex.EncodeToString(b[:])
}

// Warehouse returns a fresh s3:// warehouse location for this test.
func (e S3Env) Warehouse(t testing.TB) string {
	return "s3://" + e.Bucket + "/" + e.Prefix(t)
}

// LocalPath maps s3://BUCKET/KEY (or a bare KEY of the test bucket) to the file the
// POSIX backend stores it in.
func (e S3Env) LocalPath(location string) (string, error) {
	if e.Root == "" {
		return "", fmt.Errorf("S3 root directory unknown (SIGLAKE_TEST_S3_ROOT)")
	}
	bucket, key := e.Bucket, location
	if rest, ok := strings.CutPrefix(location, "s3://"); ok {
		var found bool
		if bucket, key, found = strings.Cut(rest, "/"); !found {
			return "", fmt.Errorf("%q has no object key", location)
		}
	}
	clean := filepath.Clean("/" + key)
	if clean == "/" || strings.Contains(key, "..") {
		return "", fmt.Errorf("%q is not a plain object key", location)
	}
	return filepath.Join(e.Root, bucket, clean), nil
}

// FileIO opens an iceberg-go FileIO on the test bucket. It lives for the test: the
// gocloud bucket behind it keeps the context it was opened with for every request.
func (e S3Env) FileIO(t testing.TB) icebergio.IO {
	t.Helper()
	fio, err := icebergio.LoadFS(t.Context(), e.Props(), "s3://"+e.Bucket+"/")
	if err != nil {
		t.Fatalf("open S3 FileIO on %s: %v", e.Endpoint, err)
	}
	return fio
}
