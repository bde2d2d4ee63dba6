// Package peerhttp is a peermsg.Transport over HTTP POST on the process's HTTP listener, for
// group commit where gossip is off: each message is signed with HMAC-SHA256 under the cluster's
// shared key (the gossip key file's keys: the first signs, every one verifies, so a rotation
// needs no restart), covering sender, recipient, a timestamp and the body. The receiver refuses
// unsigned, badly signed, stale, oversized and misaddressed messages with a reason and an HTTP
// status. Member names are advertised addresses (host:port). docs/format/peer-messages.md has
// the wire format.
package peerhttp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// Path is where messages are POSTed on the HTTP listener.
const Path = "/peer/v1/message"

// The headers of a message; the body is the message itself (its first byte is its kind).
const (
	HeaderFrom = "Siglake-Peer-From" // the sender's advertised address: answers go there
	HeaderTo   = "Siglake-Peer-To"   // the recipient's advertised address
	HeaderTime = "Siglake-Peer-Time" // the sender's clock, Unix nanoseconds
	HeaderMAC  = "Siglake-Peer-Mac"  // base64 (standard, padded) HMAC-SHA256 over Signed(...)
	// HeaderDigest is the body's SHA-256, base64 (standard, padded): the MAC covers it, so a
	// receiver checks the MAC before it reads the body (nobody without a key holds a slot).
	HeaderDigest = "Siglake-Peer-Sha256"
)

// Defaults of Config.
const (
	// DefaultMaxBytes bounds a message body: a group commit request is at most 1 MiB encoded
	// (commit.MaxMessageBytes); the slack covers the kind byte and answers.
	DefaultMaxBytes = 1<<20 + 4096
	// DefaultSkew is how far a message's time may be from the receiver's clock. A captured
	// message replayed later than this is refused; within it a replay is harmless (group commit's
	// requests and answers are idempotent by request id and stream marks).
	DefaultSkew = 30 * time.Second
	// DefaultTimeout bounds one Send, as memberlist's TCP timeout bounds a gossip user message.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxInFlight bounds the messages read at once, so the bodies in memory stay under
	// DefaultMaxInFlight x DefaultMaxBytes (64 MiB) whatever the number of pods sending.
	DefaultMaxInFlight = 64
)

// Refusal reasons (siglake_peer_messages_refused_total{reason}).
const (
	ReasonUnsigned       = "unsigned"        // a header is missing
	ReasonBadSignature   = "bad_signature"   // the MAC matches none of the keys (forged, another key)
	ReasonStale          = "stale"           // the time is outside the skew window (or unreadable)
	ReasonTooLarge       = "too_large"       // the body is over MaxBytes
	ReasonWrongRecipient = "wrong_recipient" // addressed to another member
	ReasonNoHandler      = "no_handler"      // an empty body, or a kind nothing handles here
	ReasonNoKey          = "no_key"          // this process has no key: it cannot verify anything
	ReasonMethod         = "method"          // not a POST
	ReasonBusy           = "busy"            // MaxInFlight messages are being read already
)

// Reasons lists every refusal reason (metric label values, exported at 0).
var Reasons = []string{ReasonUnsigned, ReasonBadSignature, ReasonStale, ReasonTooLarge, ReasonWrongRecipient,
	ReasonNoHandler, ReasonNoKey, ReasonMethod, ReasonBusy}

// Observer hears what the transport receives; the process counts and logs it. Both methods
// must be cheap and must not block.
type Observer interface {
	Received(kind byte)
	// Refused: a message was refused for reason (Reason*); from is its claimed sender, unverified.
	Refused(reason, from string, err error)
}

type nopObserver struct{}

func (nopObserver) Received(byte)                 {}
func (nopObserver) Refused(string, string, error) {}

// Config is a transport's options.
type Config struct {
	// Self is this member's advertised address (host:port of its HTTP listener): its name.
	Self string
	// Keys returns the keys in use: Keys()[0] signs, each one verifies. None: every message is
	// refused and Send fails.
	Keys     func() [][]byte
	MaxBytes int64         // body limit; 0: DefaultMaxBytes
	Skew     time.Duration // accepted clock difference; 0: DefaultSkew
	Timeout  time.Duration // one Send's bound; 0: DefaultTimeout
	// MaxInFlight bounds the messages received at once; beyond it 503 (busy). 0: DefaultMaxInFlight.
	MaxInFlight int
	Client      *http.Client // nil: a client of the transport's own
	Observer    Observer     // nil: nothing
	Now         func() time.Time
}

// Transport is a peermsg.Transport over HTTP; it is also the http.Handler of Path.
type Transport struct {
	cfg      Config
	slots    chan struct{} // one per message being received
	mu       sync.RWMutex
	handlers map[byte]func(from string, msg []byte)
}

// New returns a transport named cfg.Self, which must be a host:port with a host.
func New(cfg Config) (*Transport, error) {
	if err := CheckAddr(cfg.Self); err != nil {
		return nil, err
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Skew <= 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.Client == nil {
		cfg.Client = newClient(cfg.Timeout)
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Keys == nil {
		cfg.Keys = func() [][]byte { return nil }
	}
	return &Transport{cfg: cfg, slots: make(chan struct{}, cfg.MaxInFlight), handlers: map[byte]func(string, []byte){}}, nil
}

// CheckAddr accepts an advertised address: host:port with a non-empty host and a port.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && host != "" && port != "" {
		if _, perr := strconv.ParseUint(port, 10, 16); perr == nil {
			return nil
		}
	}
	return fmt.Errorf("peer address %q: accepted: host:port (an IP or DNS name other pods reach, and the --http-addr port)", addr)
}

// Name is this member's advertised address.
func (t *Transport) Name() string { return t.cfg.Self }

// Handle routes received messages whose first byte is kind to f, which must not block.
func (t *Transport) Handle(kind byte, f func(from string, msg []byte)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.handlers[kind] = f
}

// Signed is what the MAC covers: a version tag, sender, recipient, time and the body's SHA-256,
// each length-prefixed so no two messages sign the same bytes.
func Signed(from, to string, unixNano int64, digest []byte) []byte {
	var b bytes.Buffer
	b.WriteString("siglake-peer-v1")
	for _, s := range [][]byte{[]byte(from), []byte(to), binary.BigEndian.AppendUint64(nil, uint64(unixNano)), digest} {
		b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(s))))
		b.Write(s)
	}
	return b.Bytes()
}

// MAC is HMAC-SHA256 of Signed(...) under key, over the body's SHA-256 digest.
func MAC(key []byte, from, to string, unixNano int64, digest []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(Signed(from, to, unixNano, digest))
	return h.Sum(nil)
}

// Digest is a body's SHA-256.
func Digest(body []byte) []byte {
	d := sha256.Sum256(body)
	return d[:]
}

// newClient is a Send's HTTP client: no proxy from the environment (HTTP_PROXY is set for the
// object store's egress, and a proxy's 2xx is not the member's) and no redirects (a message is
// for its recipient only).
func newClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	return &http.Client{Timeout: timeout, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Send POSTs msg to member, signed with the first key; an error means it may or may not have
// arrived (a timeout), or that it was refused (the status and the receiver's reason).
func (t *Transport) Send(member string, msg []byte) error {
	if len(msg) == 0 {
		return errors.New("empty message: the first byte is its kind")
	}
	keys := t.cfg.Keys()
	if len(keys) == 0 {
		return fmt.Errorf("peer message to %s: no key to sign with", member)
	}
	now := t.cfg.Now().UnixNano()
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+member+Path, bytes.NewReader(msg))
	if err != nil {
		return fmt.Errorf("peer message to %s: %w", member, err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(HeaderFrom, t.cfg.Self)
	req.Header.Set(HeaderTo, member)
	req.Header.Set(HeaderTime, strconv.FormatInt(now, 10))
	digest := Digest(msg)
	req.Header.Set(HeaderDigest, base64.StdEncoding.EncodeToString(digest))
	req.Header.Set(HeaderMAC, base64.StdEncoding.EncodeToString(MAC(keys[0], t.cfg.Self, member, now, digest)))
	resp, err := t.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("peer message to %s: %w", member, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil
	}
	why, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	err = fmt.Errorf("peer message to %s refused: %s: %s", member, resp.Status, bytes.TrimSpace(why))
	if resp.StatusCode != http.StatusServiceUnavailable || bytes.HasPrefix(why, []byte(ReasonNoKey+":")) {
		// Not busy: a resend meets the same refusal (another key, address or version).
		err = fmt.Errorf("%w: %w", peermsg.ErrRefused, err)
	}
	return err
}

// refusal is a refused message: its reason, HTTP status and what to tell the sender.
type refusal struct {
	reason string
	status int
	err    error
}

func refuse(reason string, status int, format string, args ...any) *refusal {
	return &refusal{reason: reason, status: status, err: fmt.Errorf(format, args...)}
}

// ServeHTTP receives one message: checked, then handed to its kind's handler, 202 Accepted.
func (t *Transport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	from := r.Header.Get(HeaderFrom)
	digest, ref := t.checkHeaders(r)
	if ref != nil {
		t.cfg.Observer.Refused(ref.reason, from, ref.err)
		http.Error(w, ref.reason+": "+ref.err.Error(), ref.status)
		return
	}
	// Only a sender with a key gets here: a slot (and a body read) is never held without one.
	select {
	case t.slots <- struct{}{}:
		defer func() { <-t.slots }()
	default:
		ref := refuse(ReasonBusy, http.StatusServiceUnavailable, "%d messages are being received: resend later", t.cfg.MaxInFlight)
		t.cfg.Observer.Refused(ref.reason, from, ref.err)
		w.Header().Set("Retry-After", "1")
		http.Error(w, ref.reason+": "+ref.err.Error(), ref.status)
		return
	}
	body, f, ref := t.checkBody(w, r, digest)
	if ref != nil {
		t.cfg.Observer.Refused(ref.reason, from, ref.err)
		http.Error(w, ref.reason+": "+ref.err.Error(), ref.status)
		return
	}
	t.cfg.Observer.Received(body[0])
	f(from, body)
	w.WriteHeader(http.StatusAccepted)
}

// checkHeaders applies the receive rules that need no body, in the order that costs least:
// method, headers, recipient, time, size, then the MAC over the body's digest (constant time,
// against every key); it returns the digest the body must have.
func (t *Transport) checkHeaders(r *http.Request) ([]byte, *refusal) {
	if r.Method != http.MethodPost {
		return nil, refuse(ReasonMethod, http.StatusMethodNotAllowed, "method %s: accepted: POST", r.Method)
	}
	from, to, ts, sig, dg := r.Header.Get(HeaderFrom), r.Header.Get(HeaderTo), r.Header.Get(HeaderTime), r.Header.Get(HeaderMAC), r.Header.Get(HeaderDigest)
	if from == "" || to == "" || ts == "" || sig == "" || dg == "" {
		return nil, refuse(ReasonUnsigned, http.StatusUnauthorized, "headers %s, %s, %s, %s and %s are required", HeaderFrom, HeaderTo, HeaderTime, HeaderDigest, HeaderMAC)
	}
	keys := t.cfg.Keys()
	if len(keys) == 0 {
		return nil, refuse(ReasonNoKey, http.StatusServiceUnavailable, "this member has no key to verify with")
	}
	if to != t.cfg.Self {
		return nil, refuse(ReasonWrongRecipient, http.StatusMisdirectedRequest, "addressed to %q, this member is %q", to, t.cfg.Self)
	}
	nanos, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, refuse(ReasonStale, http.StatusUnauthorized, "time %q: accepted: Unix nanoseconds", ts)
	}
	if d := t.cfg.Now().Sub(time.Unix(0, nanos)); d > t.cfg.Skew || d < -t.cfg.Skew {
		return nil, refuse(ReasonStale, http.StatusUnauthorized, "sent %v from this member's clock, outside ±%v", d.Round(time.Millisecond), t.cfg.Skew)
	}
	if r.ContentLength > t.cfg.MaxBytes {
		return nil, refuse(ReasonTooLarge, http.StatusRequestEntityTooLarge, "body of %d bytes, accepted: at most %d", r.ContentLength, t.cfg.MaxBytes)
	}
	mac, err := base64.StdEncoding.DecodeString(sig)
	digest, derr := base64.StdEncoding.DecodeString(dg)
	if err != nil || derr != nil || len(digest) != sha256.Size || !verify(keys, mac, from, to, nanos, digest) {
		return nil, refuse(ReasonBadSignature, http.StatusUnauthorized, "the MAC matches none of this member's keys")
	}
	return digest, nil
}

// checkBody reads the body of a message whose headers passed, checks it has the signed digest,
// and finds the kind's handler.
func (t *Transport) checkBody(w http.ResponseWriter, r *http.Request, digest []byte) ([]byte, func(string, []byte), *refusal) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, t.cfg.MaxBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, nil, refuse(ReasonTooLarge, http.StatusRequestEntityTooLarge, "body over %d bytes", t.cfg.MaxBytes)
		}
		return nil, nil, refuse(ReasonNoHandler, http.StatusBadRequest, "read body: %v", err)
	}
	if !hmac.Equal(Digest(body), digest) {
		return nil, nil, refuse(ReasonBadSignature, http.StatusUnauthorized, "the body is not the one signed")
	}
	if len(body) == 0 {
		return nil, nil, refuse(ReasonNoHandler, http.StatusBadRequest, "empty message: the first byte is its kind")
	}
	t.mu.RLock()
	f := t.handlers[body[0]]
	t.mu.RUnlock()
	if f == nil {
		return nil, nil, refuse(ReasonNoHandler, http.StatusNotFound, "no handler for messages of kind %q here (yet)", body[0])
	}
	return body, f, nil
}

// verify compares mac with the MAC under every key in constant time, and looks at every key
// whichever matches, so the time taken says nothing about which one did.
func verify(keys [][]byte, mac []byte, from, to string, nanos int64, digest []byte) bool {
	ok := false
	for _, k := range keys {
		if hmac.Equal(mac, MAC(k, from, to, nanos, digest)) {
			ok = true
		}
	}
	return ok
}
