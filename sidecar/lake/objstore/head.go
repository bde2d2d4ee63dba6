package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Stat of a data file is the group committer's check of every handed-off file (one per pod
// request, 100 a second at 1,000 pods). Through the SDK a HEAD runs its whole middleware stack
// (endpoint rules, retries, checksums, user agent): half of the committer's CPU in the 1,000-pod
// profile (docs/benchmarks.md, "The max wait"). So a Stat that finds the object is one HEAD
// signed here and sent through the same counting HTTP client; anything else (not found, an error,
// a directory) asks iceberg-go's FileIO again, which keeps its own semantics for those.

// emptySHA256 is the SHA-256 of an empty payload, the signed payload hash of a HEAD.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// headStatFS is iceberg-go's S3 FileIO with a lean Stat.
type headStatFS struct {
	*blobfs.FileIO
	head *header
}

// header sends signed HEADs to one bucket.
type header struct {
	ctx       context.Context
	bucket    string
	base      *url.URL // scheme and host; path style puts the bucket in the path
	pathStyle bool
	region    string
	creds     aws.CredentialsProvider
	client    httpDoer
	signer    *v4.Signer
}

// newHeader returns the HEAD sender for bucket under cfg and props, or nil where the plain FileIO
// is kept. Only an endpoint named outright (--s3-endpoint's s3.endpoint, or AWS_S3_ENDPOINT), the
// one iceberg-go hands the SDK as its base endpoint, is used: without one the SDK resolves the
// endpoint itself (AWS_ENDPOINT_URL_S3, shared config, FIPS, dual-stack, partitions), and a HEAD
// that guessed differently would sign requests for another endpoint. Nor with S3 compatibility
// mode, or without credentials or a region.
func newHeader(ctx context.Context, cfg *aws.Config, props map[string]string, bucket string) *header {
	if compat, _ := strconv.ParseBool(props[icebergio.S3CompatMode]); compat || cfg.Credentials == nil || cfg.Region == "" {
		return nil
	}
	endpoint, ok := props[icebergio.S3EndpointURL]
	if !ok {
		endpoint = os.Getenv("AWS_S3_ENDPOINT")
	}
	if endpoint == "" {
		return nil
	}
	pathStyle := true // iceberg-go's rule: path style for a named endpoint unless forced virtual
	if v, err := strconv.ParseBool(props[icebergio.S3ForceVirtualAddressing]); err == nil {
		pathStyle = !v
	}
	base, err := url.Parse(endpoint)
	if err != nil || base.Host == "" || (base.Scheme != "http" && base.Scheme != "https") || base.Path != "" && base.Path != "/" {
		return nil
	}
	if !pathStyle && (strings.Contains(bucket, ".") || bucket != strings.ToLower(bucket)) {
		return nil // not a DNS label: only path style could name it
	}
	return &header{ctx: ctx, bucket: bucket, base: base, pathStyle: pathStyle, region: cfg.Region, creds: cfg.Credentials,
		client: cfg.HTTPClient, signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })}
}

// Stat is one signed HEAD when the object is there; iceberg-go's Stat otherwise.
func (s headStatFS) Stat(name string) (fs.FileInfo, error) {
	if key, ok := s.head.key(name); ok {
		if fi, err := s.head.stat(key); err == nil {
			return fi, nil
		}
	}
	return s.FileIO.Stat(name)
}

// key is the object key of an s3://bucket/key location of this bucket.
func (h *header) key(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "s3://"+h.bucket+"/")
	if !ok {
		rest, ok = strings.CutPrefix(name, "s3a://"+h.bucket+"/")
	}
	return rest, ok && rest != "" && !strings.HasSuffix(rest, "/")
}

// errNotHere is any answer but 200: the caller asks the FileIO, which says what it means.
var errNotHere = errors.New("HEAD did not find the object")

func (h *header) stat(key string) (fs.FileInfo, error) {
	u := *h.base
	if h.pathStyle {
		u.Path, u.RawPath = "/"+h.bucket+"/"+key, "/"+escapeKey(h.bucket)+"/"+escapeKey(key)
	} else {
		u.Host = h.bucket + "." + u.Host
		u.Path, u.RawPath = "/"+key, "/"+escapeKey(key)
	}
	req, err := http.NewRequestWithContext(h.ctx, http.MethodHead, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	creds, err := h.creds.Retrieve(h.ctx)
	if err != nil {
		return nil, err
	}
	if err := h.signer.SignHTTP(h.ctx, creds, req, emptySHA256, "s3", h.region, time.Now()); err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength < 0 {
		return nil, fmt.Errorf("%w: %s", errNotHere, resp.Status)
	}
	mod, _ := http.ParseTime(resp.Header.Get("Last-Modified"))
	return headInfo{name: path.Base(key), size: resp.ContentLength, mod: mod}, nil
}

// escapeKey encodes a key as S3's signature does: every byte but the unreserved ones and '/'.
func escapeKey(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// headInfo is what a HEAD says of an object.
type headInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i headInfo) Name() string       { return i.name }
func (i headInfo) Size() int64        { return i.size }
func (i headInfo) Mode() fs.FileMode  { return fs.ModeIrregular } // as iceberg-go's blob FileInfo
func (i headInfo) ModTime() time.Time { return i.mod }
func (i headInfo) IsDir() bool        { return false }
func (i headInfo) Sys() any           { return nil }
