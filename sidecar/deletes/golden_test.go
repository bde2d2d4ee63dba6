package deletes

import "testing"

// TestRequestGolden: today's stored requests (versions 1 and 2, every state) decode and encode
// back to the same bytes, so a change of codec never rewrites what tables hold
// (docs/format/table-properties.md).
func TestRequestGolden(t *testing.T) {
	for _, tc := range []struct{ id, stored string }{
		{"20260102T030405Z-a1b2c3", `{"version":1,"id":"20260102T030405Z-a1b2c3","where":[{"column":"service","values":["billing"]}],` +
			`"to":"2026-01-02T03:04:05Z","created_at":"2026-01-02T03:04:05.123Z","state":"pending","rows_deleted":0,"files_rewritten":0}`},
		{"20260102T030405Z-d4e5f6", `{"version":2,"id":"20260102T030405Z-d4e5f6","where":null,"from":"2026-01-01T00:00:00Z",` +
			`"to":"2026-01-02T00:00:00Z","reason":"GDPR 123","created_at":"2026-01-02T03:04:05Z","execute_at":"2026-01-03T03:04:05Z",` +
			`"all_rows":true,"state":"done","rows_deleted":1200,"files_rewritten":3,"done_at":"2026-01-03T04:00:00Z","done_snapshot_id":77}`},
		{"20260102T030405Z-0a0b0c", `{"version":2,"id":"20260102T030405Z-0a0b0c","where":[{"column":"user","values":["a","b"]}],` +
			`"created_at":"2026-01-02T03:04:05Z","execute_at":"2026-01-03T03:04:05Z","state":"cancelled","cancelled_at":"2026-01-02T05:00:00Z",` +
			`"rows_deleted":0,"files_rewritten":0}`},
	} {
		r, err := Decode(Key(tc.id), tc.stored)
		if err != nil {
			t.Fatalf("decode %s: %v", tc.stored, err)
		}
		v, err := r.Encode()
		if err != nil || v != tc.stored {
			t.Fatalf("re-encoded %s (%v), want %s", v, err, tc.stored)
		}
	}
}
