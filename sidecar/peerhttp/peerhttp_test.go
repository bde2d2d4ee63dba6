package peerhttp

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// counts is an Observer that records the refusals by reason.
type counts struct {
	mu      sync.Mutex
	refused map[string]int
	got     int
}

func (c *counts) Received(byte) { c.mu.Lock(); defer c.mu.Unlock(); c.got++ }
func (c *counts) Refused(reason, _ string, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused[reason]++
}
func (c *counts) received() int        { c.mu.Lock(); defer c.mu.Unlock(); return c.got }
func (c *counts) of(reason string) int { c.mu.Lock(); defer c.mu.Unlock(); return c.refused[reason] }

// member is a transport serving on 127.0.0.1 with settable keys and clock.
type member struct {
	*Transport
	obs   *counts
	mu    sync.Mutex
	keys  [][]byte
	clock time.Time
	msgs  chan string
}

func (m *member) setKeys(k ...[]byte) { m.mu.Lock(); defer m.mu.Unlock(); m.keys = k }
func (m *member) shift(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clock = m.clock.Add(d)
}

func newMember(t *testing.T, keys ...[]byte) *member {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &member{obs: &counts{refused: map[string]int{}}, keys: keys, clock: time.Now(), msgs: make(chan string, 16)}
	m.Transport, err = New(Config{Self: ln.Addr().String(), MaxBytes: 1024, Observer: m.obs,
		Keys: func() [][]byte { m.mu.Lock(); defer m.mu.Unlock(); return m.keys },
		Now:  func() time.Time { m.mu.Lock(); defer m.mu.Unlock(); return m.clock }})
	if err != nil {
		t.Fatal(err)
	}
	m.Handle('G', func(from string, msg []byte) { m.msgs <- from + " " + string(msg) })
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != Path {
			http.NotFound(w, r)
			return
		}
		m.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return m
}

var (
	keyA = bytes.Repeat([]byte{1}, 32)
	keyB = bytes.Repeat([]byte{2}, 32)
)

func (m *member) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-m.msgs:
		if got != want {
			t.Fatalf("delivered %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%q not delivered", want)
	}
}

func (m *member) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-m.msgs:
		t.Fatalf("delivered %q, want nothing", got)
	default:
	}
}

// post sends a hand-made message to m and returns the status.
func post(t *testing.T, m *member, hdr map[string]string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+m.Name()+Path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// signed is the headers of a message from, to, at, signed with key.
func signed(key []byte, from, to string, at time.Time, body []byte) map[string]string {
	return map[string]string{HeaderFrom: from, HeaderTo: to, HeaderTime: strconv.FormatInt(at.UnixNano(), 10),
		HeaderDigest: base64.StdEncoding.EncodeToString(Digest(body)),
		HeaderMAC:    base64.StdEncoding.EncodeToString(MAC(key, from, to, at.UnixNano(), Digest(body)))}
}

// TestTransportDelivers: a signed message arrives with its sender's name, and answers go back.
func TestTransportDelivers(t *testing.T) {
	a, b := newMember(t, keyA), newMember(t, keyA)
	if err := a.Send(b.Name(), []byte("Ghello")); err != nil {
		t.Fatal(err)
	}
	b.expect(t, a.Name()+" Ghello")
	if err := b.Send(a.Name(), []byte("Ganswer")); err != nil {
		t.Fatal(err)
	}
	a.expect(t, b.Name()+" Ganswer")
	if b.obs.received() != 1 {
		t.Fatalf("received %d", b.obs.received())
	}
}

// TestTransportRefuses: every kind of bad message is refused with its status and reason,
// counted, and never reaches a handler.
func TestTransportRefuses(t *testing.T) {
	a, b := newMember(t, keyA), newMember(t, keyA)
	body := []byte("Gpayload")
	now := time.Now()
	good := signed(keyA, a.Name(), b.Name(), now, body)
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for kk, vv := range good {
			h[kk] = vv
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	forged := MAC(keyA, a.Name(), b.Name(), now.UnixNano(), Digest(body))
	forged[0] ^= 1
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		body   []byte
		status int
		reason string
	}{
		{"unsigned", with(HeaderMAC, ""), body, http.StatusUnauthorized, ReasonUnsigned},
		{"no digest", with(HeaderDigest, ""), body, http.StatusUnauthorized, ReasonUnsigned},
		{"digest changed under the MAC", with(HeaderDigest, base64.StdEncoding.EncodeToString(Digest([]byte("Gother")))), body, http.StatusUnauthorized, ReasonBadSignature},
		{"forged MAC", with(HeaderMAC, base64.StdEncoding.EncodeToString(forged)), body, http.StatusUnauthorized, ReasonBadSignature},
		{"body changed under the MAC", good, []byte("Gpayloaf"), http.StatusUnauthorized, ReasonBadSignature},
		{"sender changed under the MAC", with(HeaderFrom, "10.9.9.9:1"), body, http.StatusUnauthorized, ReasonBadSignature},
		{"wrong key", signed(keyB, a.Name(), b.Name(), now, body), body, http.StatusUnauthorized, ReasonBadSignature},
		{"stale", signed(keyA, a.Name(), b.Name(), now.Add(-DefaultSkew-time.Second), body), body, http.StatusUnauthorized, ReasonStale},
		{"from the future", signed(keyA, a.Name(), b.Name(), now.Add(DefaultSkew+time.Second), body), body, http.StatusUnauthorized, ReasonStale},
		{"wrong recipient", signed(keyA, a.Name(), "10.1.2.3:8080", now, body), body, http.StatusMisdirectedRequest, ReasonWrongRecipient},
		{"oversized", signed(keyA, a.Name(), b.Name(), now, bytes.Repeat([]byte("G"), 1025)), bytes.Repeat([]byte("G"), 1025), http.StatusRequestEntityTooLarge, ReasonTooLarge},
		{"no handler", signed(keyA, a.Name(), b.Name(), now, []byte("Xhi")), []byte("Xhi"), http.StatusNotFound, ReasonNoHandler},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.obs.of(tc.reason)
			if got := post(t, b, tc.hdr, tc.body); got != tc.status {
				t.Errorf("status %d, want %d", got, tc.status)
			}
			if b.obs.of(tc.reason) != before+1 {
				t.Errorf("not counted as %s: %v", tc.reason, b.obs.refused)
			}
			b.none(t)
		})
	}
	resp, err := http.Get("http://" + b.Name() + Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || b.obs.of(ReasonMethod) != 1 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	// Send reports a refusal with the receiver's reason.
	a.setKeys(keyB)
	if err := a.Send(b.Name(), body); err == nil || !strings.Contains(err.Error(), ReasonBadSignature) {
		t.Fatalf("Send with another key: %v", err)
	}
	b.none(t)
}

// TestTransportReplay: a captured message replayed within the skew window is accepted (group
// commit's messages are idempotent); replayed once the window passed, it is refused as stale.
func TestTransportReplay(t *testing.T) {
	a, b := newMember(t, keyA), newMember(t, keyA)
	body := []byte("Gonce")
	hdr := signed(keyA, a.Name(), b.Name(), b.cfg.Now(), body)
	if got := post(t, b, hdr, body); got != http.StatusAccepted {
		t.Fatalf("first delivery: %d", got)
	}
	b.expect(t, a.Name()+" Gonce")
	b.shift(DefaultSkew + time.Millisecond)
	if got := post(t, b, hdr, body); got != http.StatusUnauthorized || b.obs.of(ReasonStale) != 1 {
		t.Fatalf("replay after the window: %d, stale %d", got, b.obs.of(ReasonStale))
	}
	b.none(t)
}

// TestTransportKeyRotation: the gossip key file's rotation steps (add the new key second, make it
// first, remove the old one) never cut two members off each other, whichever has moved on.
func TestTransportKeyRotation(t *testing.T) {
	a, b := newMember(t, keyA), newMember(t, keyA)
	send := func(from, to *member, ok bool) {
		t.Helper()
		err := from.Send(to.Name(), []byte("Gk"))
		if (err == nil) != ok {
			t.Fatalf("send %s -> %s: %v, want ok %v", from.Name(), to.Name(), err, ok)
		}
		if ok {
			to.expect(t, from.Name()+" Gk")
		}
	}
	b.setKeys(keyA, keyB) // step 1 on b: still signs with the old key
	send(a, b, true)
	send(b, a, true)
	b.setKeys(keyB, keyA) // step 2 on b: signs with the new one, a (step 0) cannot verify it
	send(a, b, true)
	send(b, a, false)
	a.setKeys(keyB, keyA) // step 2 on a
	send(b, a, true)
	b.setKeys(keyB) // step 3 on b: the old key is gone
	send(a, b, true)
	a.setKeys(keyA) // a member left on the old key alone is refused
	send(a, b, false)
	a.setKeys() // no key: Send refuses to send unsigned
	if err := a.Send(b.Name(), []byte("Gk")); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Fatalf("send without a key: %v", err)
	}
}

func TestCheckAddr(t *testing.T) {
	for _, ok := range []string{"10.0.0.1:8080", "pod-0.siglake:9090", "[fd00::1]:8080"} {
		if err := CheckAddr(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ":8080", "10.0.0.1", "10.0.0.1:http", "10.0.0.1:70000"} {
		if err := CheckAddr(bad); err == nil || !strings.Contains(err.Error(), "accepted: host:port") {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
}

// TestTransportBusy: beyond MaxInFlight messages being received at once, the next is refused
// busy (503), so the bodies in memory stay bounded whatever the number of senders.
func TestTransportBusy(t *testing.T) {
	a, b := newMember(t, keyA), newMember(t, keyA)
	b.Transport.cfg.MaxInFlight = 1
	b.slots = make(chan struct{}, 1)
	b.slots <- struct{}{} // one message is being received
	if err := a.Send(b.Name(), []byte("Gx")); err == nil || !strings.Contains(err.Error(), "503") || b.obs.of(ReasonBusy) != 1 {
		t.Fatalf("send to a busy member: %v, busy %d", err, b.obs.of(ReasonBusy))
	}
	b.none(t)
	<-b.slots
	if err := a.Send(b.Name(), []byte("Gx")); err != nil {
		t.Fatal(err)
	}
	b.expect(t, a.Name()+" Gx")
}

// TestKeylessSendersHoldNoSlot: a sender without the key that sends a message's headers and
// then trickles its body (a slowloris) is refused on its headers, before a slot is taken, so a
// signed message still gets through with every other slot so held.
func TestKeylessSendersHoldNoSlot(t *testing.T) {
	a, b := newMember(t, keyA), newMember(t, keyA)
	b.Transport.cfg.MaxInFlight = 1
	b.slots = make(chan struct{}, 1)
	good := signed(keyA, a.Name(), b.Name(), time.Now(), []byte("Gpayload"))
	good[HeaderMAC] = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)) // no key: a guess
	conn, err := net.Dial("tcp", b.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var req strings.Builder
	req.WriteString("POST " + Path + " HTTP/1.1\r\nHost: " + b.Name() + "\r\nContent-Length: 1000\r\n")
	for k, v := range good {
		req.WriteString(k + ": " + v + "\r\n")
	}
	req.WriteString("\r\nG") // one byte of the thousand, then nothing
	if _, err := conn.Write([]byte(req.String())); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the server has the headers
	if err := a.Send(b.Name(), []byte("Gx")); err != nil {
		t.Fatalf("a signed message beside a keyless slow one: %v", err)
	}
	b.expect(t, a.Name()+" Gx")
}

// TestSendRefusalsAreFinal: a refusal a resend would meet again (another key, another address)
// wraps peermsg.ErrRefused, so the pod commits directly at once; busy does not (it passes).
func TestSendRefusalsAreFinal(t *testing.T) {
	a, b, other := newMember(t, keyA), newMember(t, keyA), newMember(t, keyB)
	if err := a.Send(other.Name(), []byte("Gx")); !errors.Is(err, peermsg.ErrRefused) {
		t.Fatalf("send to a member of another key: %v, want ErrRefused", err)
	}
	b.Transport.cfg.MaxInFlight = 1
	b.slots = make(chan struct{}, 1)
	b.slots <- struct{}{}
	if err := a.Send(b.Name(), []byte("Gx")); err == nil || errors.Is(err, peermsg.ErrRefused) {
		t.Fatalf("send to a busy member: %v, want an error that is not ErrRefused", err)
	}
	<-b.slots
}

// TestSendFollowsNoRedirect: a message goes to its recipient only: a redirect elsewhere (where
// something answers 202) is not a delivery.
func TestSendFollowsNoRedirect(t *testing.T) {
	a := newMember(t, keyA)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer sink.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, sink.URL+Path, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	if err := a.Send(strings.TrimPrefix(redirect.URL, "http://"), []byte("Gx")); err == nil {
		t.Fatal("a send redirected to another server counted as delivered")
	}
}
