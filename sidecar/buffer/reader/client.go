package reader

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/iceberg-go/table"
)

// DefaultPort is the buffer's conventional port (the chart's compactor.walBuffer.port).
const DefaultPort = 9465

// Client reads one sidecar's WAL buffer: the sealed, uncommitted rows of one pod's WAL.
type Client struct {
	// Addr is host:port or an http:// or https:// URL.
	Addr string
	// HTTP is the client to use; nil is http.DefaultClient (no timeout: an answer streams).
	HTTP *http.Client
	// Token, when set, is sent as "Authorization: Bearer" (ReadToken reads it from a file).
	Token string
}

// ReadToken reads the token a reader sends: the first token of a token file (the sidecar's own
// --buffer-token-file holds it; during a rotation the new token goes first once every sidecar
// accepts it). "" for no file.
func ReadToken(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	data, err := os.ReadFile(file)
	var tokens []string
	if err == nil {
		tokens, err = ParseTokens(data)
	}
	if err != nil {
		return "", fmt.Errorf("--buffer-token-file / SIGLAKE_BUFFER_TOKEN_FILE %q: %w; accepted: %s", file, err, TokensAccepted)
	}
	return tokens[0], nil
}

// ClientTLS is the TLS configuration of a reader: the CA that signed the buffer's certificate
// (empty: the system's roots) and, for mutual TLS, a client certificate. nil when none is given.
func ClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := CertPool(caFile)
		if err != nil {
			return nil, fmt.Errorf("--buffer-tls-ca-file / SIGLAKE_BUFFER_TLS_CA_FILE %q: %w; accepted: PEM CA certificates", caFile, err)
		}
		c.RootCAs = pool
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("--buffer-tls-cert-file / SIGLAKE_BUFFER_TLS_CERT_FILE %q with --buffer-tls-key-file / SIGLAKE_BUFFER_TLS_KEY_FILE %q: %w; accepted: a PEM certificate and its PEM private key", certFile, keyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// Answer describes a read, over all its pages.
type Answer struct {
	// After are the marks the rows are above (the first page's).
	After Marks
	// Marks are the table's marks the buffer read for the first page; nil when unverified.
	Marks Marks
	// Through are the last page's: the after= of a read of only what was sealed since.
	Through Marks
	// Segments are the segments served, by file name.
	Segments []string
	// Rows counts the rows given to the callback.
	Rows int64
	// Verified is false for an unverified answer (Query.Unverified).
	Verified bool
}

// RefusedError is a 409: segments above the reader's marks were committed and are gone from the
// buffer. Load the table again (its marks are Marks or newer), read it, and ask with its marks.
type RefusedError struct {
	Addr, Reason, Stream, Message string
	Marks                         Marks
}

func (e *RefusedError) Error() string { return fmt.Sprintf("WAL buffer %s: 409 %s", e.Addr, e.Message) }

// StatusError is any other answer than 200 or 409.
type StatusError struct {
	Addr      string
	Code      int
	Parameter string // the malformed parameter of a 400
	Message   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("WAL buffer %s: %d %s: %s", e.Addr, e.Code, http.StatusText(e.Code), e.Message)
}

// ErrCutShort is an answer whose stream ended without its end-of-stream marker: the sidecar
// stopped it after the status (a failure mid-answer), so it is not a whole answer. Read again.
var ErrCutShort = errors.New("the answer ended before its end-of-stream marker")

func (c *Client) url(tbl string, q Query) string {
	base := c.Addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return strings.TrimSuffix(base, "/") + "/v1/buffer/" + url.PathEscape(tbl) + "?" + q.Values().Encode()
}

// Read streams table's rows matching q to fn, page after page until the answer is complete.
// Records are valid until fn returns (Retain to keep one); pages may differ in columns when a
// segment brought a new one. Without q.After the rows are those above the table's current marks.
func (c *Client) Read(ctx context.Context, tbl string, q Query, fn func(arrow.RecordBatch) error) (Answer, error) {
	var ans Answer
	for page := 0; ; page++ {
		meta, rows, err := c.page(ctx, tbl, q, fn)
		ans.Rows += rows
		if err != nil {
			return ans, err
		}
		if page == 0 {
			ans.After, ans.Verified = meta.after, meta.verified
			if meta.verified {
				ans.Marks = meta.marks
			}
		}
		ans.Through = meta.through
		ans.Segments = append(ans.Segments, meta.segments...)
		if meta.complete {
			return ans, nil
		}
		if len(meta.segments) == 0 {
			return ans, fmt.Errorf("WAL buffer %s: an incomplete answer without a segment", c.Addr)
		}
		q.After = meta.through
	}
}

type pageMeta struct {
	after, marks, through Marks
	complete, verified    bool
	segments              []string
}

func (c *Client) page(ctx context.Context, tbl string, q Query, fn func(arrow.RecordBatch) error) (pageMeta, int64, error) {
	var meta pageMeta
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(tbl, q), nil)
	if err != nil {
		return meta, 0, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return meta, 0, fmt.Errorf("WAL buffer %s: %w", c.Addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var eb ErrorBody
		if json.Unmarshal(body, &eb) != nil || eb.Error == "" {
			eb.Error = strings.TrimSpace(string(body))
		}
		if resp.StatusCode == http.StatusUnauthorized {
			// Say which option of the reader fixes it; the server's message names the sidecar's.
			switch {
			case eb.Reason == UnauthorizedNoClientCert:
				eb.Error = "no client certificate the sidecar accepts: set --buffer-tls-cert-file and --buffer-tls-key-file to one its --buffer-tls-client-ca-file signed (" + eb.Error + ")"
			case c.Token == "":
				eb.Error = "no token sent: give the reader a token of the sidecar's with --buffer-token-file / SIGLAKE_BUFFER_TOKEN_FILE (" + eb.Error + ")"
			default:
				eb.Error = "the token of --buffer-token-file / SIGLAKE_BUFFER_TOKEN_FILE was refused: it is not among the sidecar's (" + eb.Error + ")"
			}
		}
		if resp.StatusCode == http.StatusConflict {
			m, _ := ParseMarks(eb.Marks)
			return meta, 0, &RefusedError{Addr: c.Addr, Reason: eb.Reason, Stream: eb.Stream, Message: eb.Error, Marks: m}
		}
		return meta, 0, &StatusError{Addr: c.Addr, Code: resp.StatusCode, Parameter: eb.Parameter, Message: eb.Error}
	}
	body := &eosReader{r: resp.Body}
	rd, err := ipc.NewReader(body)
	if err != nil {
		return meta, 0, fmt.Errorf("WAL buffer %s: reading the answer's schema: %w", c.Addr, err)
	}
	defer rd.Release()
	md := rd.Schema().Metadata()
	get := func(k string) string {
		if i := md.FindKey(k); i >= 0 {
			return md.Values()[i]
		}
		return ""
	}
	parse := func(k string) Marks {
		m, perr := ParseMarks(get(k))
		if perr != nil && err == nil {
			err = fmt.Errorf("WAL buffer %s: answer metadata %s: %w", c.Addr, k, perr)
		}
		return m
	}
	meta.after, meta.marks, meta.through = parse(MetaAfter), parse(MetaMarks), parse(MetaThrough)
	if get(MetaComplete) == "" && err == nil {
		err = fmt.Errorf("WAL buffer %s: the answer's schema lacks %s: not a WAL buffer answer", c.Addr, MetaComplete)
	}
	meta.complete, meta.verified = get(MetaComplete) == "true", get(MetaVerified) == "true"
	if s := get(MetaSegments); s != "" {
		meta.segments = strings.Split(s, ",")
	}
	if err != nil {
		return meta, 0, err
	}
	var rows int64
	for rd.Next() {
		rec := rd.RecordBatch()
		rows += rec.NumRows()
		if err := fn(rec); err != nil {
			return meta, rows, err
		}
	}
	if err := rd.Err(); err != nil {
		return meta, rows, fmt.Errorf("WAL buffer %s: %w: %w", c.Addr, ErrCutShort, err)
	}
	if _, err := io.Copy(io.Discard, body); err != nil || !body.complete() {
		return meta, rows, fmt.Errorf("WAL buffer %s: %w", c.Addr, ErrCutShort)
	}
	return meta, rows, nil
}

// eosReader remembers whether the body ended cleanly right after an end-of-stream marker.
type eosReader struct {
	r    io.Reader
	last []byte
	eof  bool
}

var eosMarker = []byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}

func (e *eosReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if n > 0 {
		e.last = append(e.last, p[:n]...)
		if len(e.last) > 8 {
			e.last = append(e.last[:0], e.last[len(e.last)-8:]...)
		}
	}
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

func (e *eosReader) complete() bool { return e.eof && bytes.Equal(e.last, eosMarker) }

// Buffers are the WAL buffers of every pod that holds a stream of the table: a reader must ask
// each of them, as each answers only for the streams of its own WAL.
type Buffers []*Client

// Resolve turns addresses into clients: a host that resolves to several addresses (a headless
// Service, one address per pod) gives one client per address, also in an http:// or https:// URL;
// over https each of them still verifies the certificate for the name that was given.
func Resolve(ctx context.Context, addrs []string, hc *http.Client) (Buffers, error) {
	var out Buffers
	for _, a := range addrs {
		scheme, hostport := "", a
		if i := strings.Index(a, "://"); i >= 0 {
			scheme, hostport = a[:i], strings.TrimSuffix(a[i+3:], "/")
			if strings.Contains(hostport, "/") {
				out = append(out, &Client{Addr: a, HTTP: hc}) // a URL with a path: as given
				continue
			}
		}
		host, port, err := net.SplitHostPort(hostport)
		if err != nil {
			return nil, fmt.Errorf("WAL buffer address %q: accepted: host:port or a URL", a)
		}
		if net.ParseIP(host) != nil {
			out = append(out, &Client{Addr: a, HTTP: hc})
			continue
		}
		ips, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("WAL buffer address %q: %w", a, err)
		}
		if len(ips) == 1 || host == "localhost" {
			out = append(out, &Client{Addr: a, HTTP: hc})
			continue
		}
		phc := hc
		if scheme == "https" {
			phc = withServerName(hc, host)
		}
		for _, ip := range ips {
			addr := net.JoinHostPort(ip, port)
			if scheme != "" {
				addr = scheme + "://" + addr
			}
			out = append(out, &Client{Addr: addr, HTTP: phc})
		}
	}
	return out, nil
}

// withServerName is hc verifying server certificates for name whatever address it dials.
func withServerName(hc *http.Client, name string) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	base, ok := hc.Transport.(*http.Transport)
	if hc.Transport == nil {
		base, ok = http.DefaultTransport.(*http.Transport)
	}
	if !ok {
		return hc
	}
	tr := base.Clone()
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.ServerName = name
	c := *hc
	c.Transport = tr
	return &c
}

// WithToken sets the token every client sends.
func (bs Buffers) WithToken(token string) Buffers {
	for _, c := range bs {
		c.Token = token
	}
	return bs
}

// ErrNoTable is a read of a table that neither the catalog nor any buffer knows (every buffer
// answered 404).
var ErrNoTable = errors.New("no such table: not in the catalog, and no WAL buffer holds a sealed segment of it")

// Read reads every buffer with q and returns the marks a next read of only newer rows passes:
// each answer's through marks, merged (the streams of the pods are disjoint). A buffer that
// answers 404 holds nothing of the table (and the catalog has no such table): it adds no rows.
func (bs Buffers) Read(ctx context.Context, tbl string, q Query, fn func(arrow.RecordBatch) error) (Marks, error) {
	through := Marks{}
	if q.After != nil {
		through = q.After.Clone()
	}
	missing := 0
	for _, c := range bs {
		ans, err := c.Read(ctx, tbl, q, fn)
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound && ans.Rows == 0 {
			missing++
			continue
		}
		if err != nil {
			return nil, err
		}
		through.Advance(ans.Through)
	}
	if missing > 0 && missing == len(bs) {
		return through, fmt.Errorf("table %s: %w", tbl, ErrNoTable)
	}
	return through, nil
}

// ReadConsistent reads a table exactly once across the lake and the buffers (promise 12 of
// DESIGN.md): it loads the table, lets lake read that snapshot, then reads every buffer with the
// snapshot's marks and q's filter, handing the rows to buffered. When a buffer refuses (the
// snapshot is older than the segments it keeps) the whole read starts again with a freshly
// loaded table, up to attempts times: lake and buffered get the attempt number, and a caller that
// collects rows drops those of an earlier attempt. It returns the marks a follower passes next.
func ReadConsistent(ctx context.Context, load func(context.Context) (*table.Table, error), bs Buffers, tbl string, q Query, attempts int,
	lake func(attempt int, t *table.Table) error, buffered func(attempt int, rec arrow.RecordBatch) error) (Marks, error) {
	var last error
	for attempt := 1; attempt <= max(1, attempts); attempt++ {
		t, err := load(ctx)
		if err != nil {
			return nil, err
		}
		marks := Marks{}
		if t != nil {
			if marks, err = TableMarks(t); err != nil {
				return nil, err
			}
		}
		if err := lake(attempt, t); err != nil {
			return nil, err
		}
		q.After, q.Unverified = marks, false
		through, err := bs.Read(ctx, tbl, q, func(rec arrow.RecordBatch) error { return buffered(attempt, rec) })
		var ref *RefusedError
		if errors.As(err, &ref) || errors.Is(err, ErrCutShort) {
			last = err
			continue
		}
		return through, err
	}
	return nil, fmt.Errorf("no consistent read of %s in %d attempts: %w", tbl, attempts, last)
}
