package claim

import "testing"

// TestRecordsGolden: today's stored claims and heartbeats decode and encode back to the same
// bytes, so a change of codec never rewrites what the claims table holds
// (docs/format/table-properties.md).
func TestRecordsGolden(t *testing.T) {
	const claim = `{"holder":"ingest-0","epoch":4,"expires":"2026-11-29T12:00:30.25Z"}`
	const beat = `{"expires":"2026-11-29T12:00:30Z"}`
	st, err := Parse(map[string]string{StreamKeyPrefix + "pod-0": claim, ClaimerKeyPrefix + "ingest-0": beat})
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(claimProperty, st.Claims["pod-0"]); got != claim {
		t.Fatalf("claim re-encoded %s, want %s", got, claim)
	}
	if got := encode(heartbeatProperty, st.Claimers["ingest-0"]); got != beat {
		t.Fatalf("heartbeat re-encoded %s, want %s", got, beat)
	}
}
