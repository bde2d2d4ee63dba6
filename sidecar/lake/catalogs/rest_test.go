package catalogs

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRT answers every request with status (and Retry-After ra) and records the bodies it got.
type fakeRT struct {
	mu     sync.Mutex
	status int
	ra     string
	bodies []string
}

func (f *fakeRT) RoundTrip(r *http.Request) (*http.Response, error) {
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	f.mu.Unlock()
	h := http.Header{}
	if f.ra != "" {
		h.Set("Retry-After", f.ra)
	}
	return &http.Response{StatusCode: f.status, Header: h, Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
}

func TestThrottleTransport(t *testing.T) {
	var waits []time.Duration
	tr := func(base http.RoundTripper) *throttleTransport {
		waits = nil
		return &throttleTransport{base: base, sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	}
	post := func() *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/v1/x", strings.NewReader(`{"a":1}`))
		return r
	}

	// Bounded: after restThrottleRetries waits the 429 goes to the caller; every send has the body.
	f := &fakeRT{status: http.StatusTooManyRequests, ra: "2"}
	resp, err := tr(f).RoundTrip(post())
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%v %v", resp, err)
	}
	if len(f.bodies) != restThrottleRetries+1 || len(waits) != restThrottleRetries || waits[0] != 2*time.Second {
		t.Fatalf("%d sends, waits %v", len(f.bodies), waits)
	}
	for _, b := range f.bodies {
		if b != `{"a":1}` {
			t.Fatalf("a resent request carried body %q", b)
		}
	}
	// No Retry-After: 1 s. Too long a Retry-After: passed on at once. Other statuses: untouched.
	if _, _ = tr(&fakeRT{status: 429}).RoundTrip(post()); waits[0] != time.Second {
		t.Fatalf("waits %v without Retry-After", waits)
	}
	f = &fakeRT{status: 429, ra: "3600"}
	if resp, _ := tr(f).RoundTrip(post()); resp.StatusCode != 429 || len(f.bodies) != 1 || len(waits) != 0 {
		t.Fatalf("Retry-After 3600: %d sends, waits %v", len(f.bodies), waits)
	}
	f = &fakeRT{status: 503, ra: "1"}
	if resp, _ := tr(f).RoundTrip(post()); resp.StatusCode != 503 || len(f.bodies) != 1 {
		t.Fatalf("503: %d sends", len(f.bodies))
	}

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{"0": 0, "7": 7 * time.Second, "-3": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second} {
		if got, ok := retryAfter(v, now); !ok || got != want {
			t.Errorf("Retry-After %q: %v %v, want %v", v, got, ok, want)
		}
	}
	if _, ok := retryAfter("soon", now); ok {
		t.Error("Retry-After \"soon\" parsed")
	}
}
