package lake

import "testing"

func TestDataDirKeepsTheSchemeSlashes(t *testing.T) {
	for loc, want := range map[string]string{
		"s3://b/wh/siglake.db/events":  "s3://b/wh/siglake.db/events/data/timestamp_day=2026-01-02",
		"s3://b/wh/siglake.db/events/": "s3://b/wh/siglake.db/events/data/timestamp_day=2026-01-02",
		"file:///tmp/wh/siglake.db/ev": "file:///tmp/wh/siglake.db/ev/data/timestamp_day=2026-01-02",
	} {
		if got := dataDir(loc, "2026-01-02"); got != want {
			t.Errorf("DataDir(%q) = %q, want %q", loc, got, want)
		}
	}
}
