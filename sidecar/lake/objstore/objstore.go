// Package objstore is siglake's object-store cost accounting and S3 client: it counts every S3
// request where it happens, and resumes GET bodies that break off. Package lake imports it for
// its side effect: the s3:// FileIO factory it registers.
package objstore

// Object-store cost accounting. Compaction's purpose is paid in object-store requests and bandwidth,
// so every S3 request siglake makes is counted where it happens: at the HTTP client of the AWS SDK,
// below the SDK's retries (a retried request counts twice, as the store bills it) and above the
// network (bytes are what went through the request and response bodies).
//
// iceberg-go opens a new S3 FileIO per table access through its scheme registry. We register our
// own factory for s3:// that builds the AWS config with a counting HTTP client, puts it in the
// context (iceberg-go's documented way to hand the S3 FileIO an AWS config) and delegates to
// iceberg-go's own factory, reached through its s3a:// alias of the same code. Paths the FileIO
// returns keep the scheme of the location they were asked about, so tables stay s3://.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	icebergs3 "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Op is a kind of object-store request, as a store bills them.
type Op string

const (
	OpGet       Op = "get"        // whole-object GET
	OpRangedGet Op = "ranged_get" // GET with a Range header (Parquet footers, column chunks)
	OpHead      Op = "head"       // HEAD (stat, existence checks)
	OpPut       Op = "put"        // single-request PUT
	OpMultipart Op = "multipart"  // create, upload part, complete or abort a multipart upload
	OpList      Op = "list"       // bucket listing
	OpDelete    Op = "delete"     // DELETE of one object, or a batch delete POST
	OpOther     Op = "other"
)

// Ops lists every Op in a fixed order (for logs and tables).
var Ops = []Op{OpGet, OpRangedGet, OpHead, OpPut, OpMultipart, OpList, OpDelete, OpOther}

// OpCost is what requests of one kind cost.
type OpCost struct {
	Requests int64
	// Errors counts requests that failed: no response (network), or a status of 400 or above. A
	// HEAD answering 404 is how an existence check says no; it is counted too (class 4xx).
	Errors       int64
	BytesRead    int64 // response body bytes the client read
	BytesWritten int64 // request body bytes sent
}

// Cost is object-store usage by request kind.
type Cost map[Op]OpCost

// Sub is c minus an earlier snapshot o: the cost of what happened in between.
func (c Cost) Sub(o Cost) Cost {
	out := Cost{}
	for op, v := range c {
		p := o[op]
		d := OpCost{Requests: v.Requests - p.Requests, Errors: v.Errors - p.Errors,
			BytesRead: v.BytesRead - p.BytesRead, BytesWritten: v.BytesWritten - p.BytesWritten}
		if d != (OpCost{}) {
			out[op] = d
		}
	}
	return out
}

// Total sums every kind.
func (c Cost) Total() OpCost {
	var t OpCost
	for _, v := range c {
		t.Requests += v.Requests
		t.Errors += v.Errors
		t.BytesRead += v.BytesRead
		t.BytesWritten += v.BytesWritten
	}
	return t
}

// CostOf returns the process's object-store usage so far for requests under table's
// directory; table "" sums every request (including those outside any table, such as listings of
// the warehouse). The drain and rewrites take one before and one after their work and log the
// difference (Cost.Sub); concurrent work on the same table is included in that difference.
func CostOf(table string) Cost {
	return accounting.cost(table)
}

// key is one (table, op) counter; table is "" for requests outside a table directory.
type key struct {
	table string
	op    Op
}

type opCounters struct {
	requests, bytesRead, bytesWritten atomic.Int64
	errNetwork, err4xx, err5xx        atomic.Int64
}

type accountant struct {
	mu sync.RWMutex
	m  map[key]*opCounters
}

var accounting = &accountant{m: map[key]*opCounters{}}

func (a *accountant) counters(k key) *opCounters {
	a.mu.RLock()
	c := a.m[k]
	a.mu.RUnlock()
	if c != nil {
		return c
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c = a.m[k]; c == nil {
		c = &opCounters{}
		a.m[k] = c
	}
	return c
}

func (a *accountant) cost(table string) Cost {
	out := Cost{}
	a.mu.RLock()
	defer a.mu.RUnlock()
	for k, c := range a.m {
		if table != "" && k.table != table {
			continue
		}
		v := out[k.op]
		v.Requests += c.requests.Load()
		v.Errors += c.errNetwork.Load() + c.err4xx.Load() + c.err5xx.Load()
		v.BytesRead += c.bytesRead.Load()
		v.BytesWritten += c.bytesWritten.Load()
		out[k.op] = v
	}
	return out
}

// classify names the kind of an S3 REST request and the table directory it touches.
func classify(r *http.Request) (Op, string) {
	q := r.URL.Query()
	var op Op
	switch r.Method {
	case http.MethodGet:
		switch {
		case q.Has("list-type") || q.Has("prefix") || q.Has("delimiter") || q.Has("uploads") || isBucketPath(r):
			op = OpList
		case r.Header.Get("Range") != "":
			op = OpRangedGet
		default:
			op = OpGet
		}
	case http.MethodHead:
		op = OpHead
	case http.MethodPut:
		op = OpPut
		if q.Has("uploadId") {
			op = OpMultipart
		}
	case http.MethodPost:
		switch {
		case q.Has("uploads") || q.Has("uploadId"):
			op = OpMultipart
		case q.Has("delete"):
			op = OpDelete
		default:
			op = OpOther
		}
	case http.MethodDelete:
		op = OpDelete
		if q.Has("uploadId") {
			op = OpMultipart
		}
	default:
		op = OpOther
	}
	p := r.URL.Path
	if prefix := q.Get("prefix"); prefix != "" {
		p += "/" + prefix
	}
	return op, tableOfPath(p)
}

// isBucketPath says the request names a bucket, not an object (path-style /bucket or /bucket/).
func isBucketPath(r *http.Request) bool {
	p := strings.Trim(r.URL.Path, "/")
	return p == "" || !strings.Contains(p, "/")
}

// tableOfPath finds the table directory in an object path: catalogs place table NAME of namespace
// NS at WAREHOUSE/NS.db/NAME, so the segment after the first "*.db" segment is the table. Paths
// outside that layout give "", which keeps the label's cardinality at the number of tables.
func tableOfPath(p string) string {
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	segs := strings.Split(p, "/")
	for i := 0; i+1 < len(segs); i++ {
		if strings.HasSuffix(segs[i], ".db") && len(segs[i]) > 3 && segs[i+1] != "" {
			if i+2 < len(segs) { // the table directory itself, not a file directly under NS.db
				return segs[i+1]
			}
		}
	}
	return ""
}

// httpDoer is the AWS SDK's HTTP client interface (aws.HTTPClient).
type httpDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// countingClient counts every request the SDK sends through it.
type countingClient struct{ inner httpDoer }

func (c countingClient) Do(r *http.Request) (*http.Response, error) {
	op, tbl := classify(r)
	ctr := accounting.counters(key{tbl, op})
	ctr.requests.Add(1)
	if r.ContentLength > 0 {
		ctr.bytesWritten.Add(r.ContentLength)
	}
	resp, err := c.inner.Do(r)
	if err != nil {
		ctr.errNetwork.Add(1)
		return resp, err
	}
	switch {
	case resp.StatusCode >= 500:
		ctr.err5xx.Add(1)
	case resp.StatusCode >= 400:
		ctr.err4xx.Add(1)
	}
	if resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, ctr: ctr}
		if r.Method == http.MethodGet && resp.ContentLength > 0 &&
			(resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent) {
			resp.Body = &resumingBody{body: resp.Body, client: c, req: r, etag: resp.Header.Get("ETag"), want: resp.ContentLength}
		}
	}
	return resp, nil
}

// maxResumes bounds how often one response body is fetched again after breaking off.
const maxResumes = 3

// resumingBody hides a GET body that breaks off (a short read: connection reset or closed before
// Content-Length bytes arrived) by sending the same signed request again and skipping what was
// already delivered. The SDK retries requests that fail before a response, but not a body that
// breaks while the caller reads it, and one short read would otherwise fail a whole rewrite.
// Iceberg files are immutable; the ETag check refuses to splice two versions of an object.
type resumingBody struct {
	body    io.ReadCloser
	client  countingClient
	req     *http.Request
	etag    string
	want    int64 // Content-Length of the first response
	got     int64
	resumes int
}

func (b *resumingBody) Read(p []byte) (int, error) {
	for {
		n, err := b.body.Read(p)
		b.got += int64(n)
		switch {
		case err == nil:
			return n, nil
		case b.got >= b.want:
			return n, err // complete (EOF), or an error after the last byte
		case n > 0:
			return n, nil // hand over what arrived; the next Read finds the break and resumes
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if b.resumes >= maxResumes || b.req.Context().Err() != nil {
			return 0, err
		}
		if rerr := b.resume(); rerr != nil {
			return 0, fmt.Errorf("%w (resuming the body after %d of %d bytes: %v)", err, b.got, b.want, rerr)
		}
	}
}

// errObjectChanged refuses to splice bytes of two versions of an object.
var errObjectChanged = errors.New("object changed")

// resume re-sends the request and skips the bytes already delivered. A resume that itself meets a
// transient failure (no response, a 5xx, another short read) uses up one of the body's resumes and
// tries again; an answer for a different object version ends it.
func (b *resumingBody) resume() error {
	b.body.Close()
	var last error
	for b.resumes < maxResumes && b.req.Context().Err() == nil {
		b.resumes++
		if b.resumes > 1 {
			time.Sleep(time.Duration(b.resumes) * 50 * time.Millisecond)
		}
		resp, err := b.client.Do(b.req.Clone(b.req.Context()))
		if err != nil {
			last = err
			continue
		}
		if resp.StatusCode >= 500 {
			resp.Body.Close()
			last = fmt.Errorf("status %d", resp.StatusCode)
			continue
		}
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent || resp.ContentLength != b.want ||
			resp.Header.Get("ETag") != b.etag {
			resp.Body.Close()
			return fmt.Errorf("%w: status %d, %d bytes, ETag %q (was %q)", errObjectChanged,
				resp.StatusCode, resp.ContentLength, resp.Header.Get("ETag"), b.etag)
		}
		inner := resp.Body
		if rb, ok := inner.(*resumingBody); ok { // the new response got its own; one level is enough
			inner = rb.body
		}
		if _, err := io.CopyN(io.Discard, inner, b.got); err != nil {
			inner.Close()
			last = err
			continue
		}
		b.body = inner
		return nil
	}
	if last == nil {
		last = b.req.Context().Err()
	}
	b.body = io.NopCloser(strings.NewReader("")) // closed above; later Reads see a short body
	return last
}

func (b *resumingBody) Close() error { return b.body.Close() }

// countingBody counts response bytes as the SDK reads them; a short read counts what arrived.
type countingBody struct {
	io.ReadCloser
	ctr *opCounters
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.ctr.bytesRead.Add(int64(n))
	if err != nil && err != io.EOF {
		b.ctr.errNetwork.Add(1)
	}
	return n, err
}

// newS3HTTPClient is the SDK's buildable client with the connection pool iceberg-go gives its own.
func newS3HTTPClient() httpDoer {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns, t.MaxIdleConnsPerHost, t.MaxConnsPerHost = 256, 256, 2048
		t.IdleConnTimeout = 90 * time.Second
	})
}

// DefaultS3MaxAttempts is how often the S3 client sends one request before giving up, unless
// AWS_MAX_ATTEMPTS (or an AWS config in the context) says otherwise.
const DefaultS3MaxAttempts = 6

// s3AliasScheme is a scheme iceberg-go registers for the same S3 factory as s3://.
const s3AliasScheme = "s3a"

func countingS3Factory(ctx context.Context, parsed *url.URL, props map[string]string) (icebergio.IO, error) {
	cfg, err := s3Config(ctx, props)
	if err != nil {
		return nil, err
	}
	alias := *parsed
	alias.Scheme = s3AliasScheme
	fsys, err := icebergio.LoadFS(utils.WithAwsConfig(ctx, cfg), props, alias.String())
	if err != nil {
		return nil, err
	}
	if bfs, ok := fsys.(*blobfs.FileIO); ok {
		if h := newHeader(ctx, cfg, props, parsed.Host); h != nil {
			return headStatFS{FileIO: bfs, head: h}, nil
		}
	}
	return fsys, nil
}

// s3Config is the AWS config of one FileIO: the context's (utils.WithAwsConfig) if it has one,
// else the one resolved from props and the environment, with the counting client and the retry
// default. A resolved config is kept for the next FileIO of the same props and AWS_* variables:
// iceberg-go opens a FileIO per table load and commit, and resolving one (the default chain, a CA
// bundle parsed from PEM) and a fresh HTTP client (new TCP and TLS connections) took about half of
// a group committer's CPU. Kept, its credentials cache and connection pool are shared too.
func s3Config(ctx context.Context, props map[string]string) (*aws.Config, error) {
	if base := utils.GetAwsConfig(ctx); base != nil {
		c := *base
		withCounting(&c)
		return &c, nil
	}
	k := configKey(props)
	configs.mu.Lock()
	cached := configs.m[k]
	configs.mu.Unlock()
	if cached == nil {
		cfg, err := parseAWSConfig(ctx, props)
		if err != nil {
			return nil, err
		}
		withCounting(cfg)
		configs.mu.Lock()
		if len(configs.m) >= maxConfigs { // props that keep changing: start over rather than grow
			clear(configs.m)
		}
		configs.m[k] = cfg
		configs.mu.Unlock()
		cached = cfg
	}
	c := *cached
	return &c, nil
}

// parseAWSConfig resolves an AWS config from FileIO properties and the environment; tests count
// its calls.
var parseAWSConfig = icebergs3.ParseAWSConfig

// configs are the resolved AWS configs by configKey, at most maxConfigs.
var configs = struct {
	mu sync.Mutex
	m  map[string]*aws.Config
}{m: map[string]*aws.Config{}}

const maxConfigs = 16

// configKey identifies what a resolved config depends on: the properties ParseAWSConfig reads
// (s3.*, client.*, token; not the table's own, which change with every commit) and the AWS_*
// environment, hashed (the properties hold credentials).
func configKey(props map[string]string) string {
	lines := make([]string, 0, 16)
	for k, v := range props {
		if strings.HasPrefix(k, "s3.") || strings.HasPrefix(k, "client.") || k == "token" {
			lines = append(lines, "p "+k+"="+v)
		}
	}
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "AWS_") {
			lines = append(lines, "e "+e)
		}
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return string(sum[:])
}

// withCounting gives cfg the counting HTTP client and the retry default.
func withCounting(cfg *aws.Config) {
	inner := httpDoer(cfg.HTTPClient)
	if inner == nil {
		inner = newS3HTTPClient()
	}
	if cfg.RetryMaxAttempts == 0 && cfg.Retryer == nil {
		// The SDK's default of 3 attempts lets one request in a thousand fail for good at a 10%
		// error rate; a rewrite makes hundreds. AWS_MAX_ATTEMPTS still overrides this.
		cfg.RetryMaxAttempts = DefaultS3MaxAttempts
	}
	if _, already := inner.(countingClient); !already {
		cfg.HTTPClient = countingClient{inner: inner}
	}
}

func init() {
	// iceberg-go's s3 package registered its factory in its own init, which ran first (we import it).
	icebergio.Unregister("s3")
	icebergio.Register("s3", countingS3Factory)
}

// Count is one (table, kind) counter of the accounting: what sidecar/instrument
// exports as the siglake_objstore_* metrics (lake itself imports no metrics library).
type Count struct {
	Table string // "" for requests outside any table directory
	Op    Op
	// Requests, BytesRead and BytesWritten as in OpCost; the errors by class.
	Requests, BytesRead, BytesWritten int64
	ErrNetwork, Err4xx, Err5xx        int64
}

// Counts returns every counter of the process so far, sorted by table, then kind.
func Counts() []Count {
	accounting.mu.RLock()
	out := make([]Count, 0, len(accounting.m))
	for k, c := range accounting.m {
		out = append(out, Count{Table: k.table, Op: k.op, Requests: c.requests.Load(),
			BytesRead: c.bytesRead.Load(), BytesWritten: c.bytesWritten.Load(),
			ErrNetwork: c.errNetwork.Load(), Err4xx: c.err4xx.Load(), Err5xx: c.err5xx.Load()})
	}
	accounting.mu.RUnlock()
	sort.Slice(out, func(a, b int) bool {
		return out[a].Table < out[b].Table || out[a].Table == out[b].Table && out[a].Op < out[b].Op
	})
	return out
}
