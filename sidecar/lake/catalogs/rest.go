package catalogs

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/siglake/siglake/sidecar/lake/backoff"
)

// restRetryAfterMax bounds the wait of one 429: a server asking for longer gets its 429 passed on
// (an error: the drain's own backoff takes over and the batch stays in the WAL).
const restRetryAfterMax = 30 * time.Second

// restThrottleRetries bounds the 429s answered by waiting, per request.
const restThrottleRetries = 5

// throttleTransport is the HTTP transport of a REST catalog. It answers a 429 Too Many Requests
// by waiting as long as its Retry-After says (1 s without one) and sending the request again: a
// 429 is a refusal, the server did not process the request, so sending it again cannot apply a
// commit twice. iceberg-go's REST client has no such wait and would return the 429 as an error of
// unknown outcome.
type throttleTransport struct {
	base http.RoundTripper
	// sleep waits d or until ctx is done (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
}

func newRESTTransport() *throttleTransport {
	return &throttleTransport{base: http.DefaultTransport.(*http.Transport).Clone(), sleep: backoff.Sleep}
}

func (t *throttleTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	req := r
	for attempt := 0; ; attempt++ {
		resp, err := t.base.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || attempt >= restThrottleRetries {
			return resp, err
		}
		wait, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		if !ok {
			wait = time.Second
		}
		if wait > restRetryAfterMax || (r.Body != nil && r.Body != http.NoBody && r.GetBody == nil) {
			return resp, nil // too long to wait here, or the body cannot be sent again
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		if err := t.sleep(r.Context(), wait); err != nil {
			return nil, err
		}
		req = r.Clone(r.Context())
		if r.GetBody != nil {
			if req.Body, err = r.GetBody(); err != nil {
				return nil, err
			}
		}
	}
}

// CloseIdleConnections lets the REST client's Close release the pooled connections.
func (t *throttleTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date (RFC 9110 10.2.3).
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(0, s)) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(0, at.Sub(now)), true
	}
	return 0, false
}
