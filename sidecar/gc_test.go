package sidecar

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/puffinidx"
)

// TestGCEmbedded runs gc on the embedded default (local warehouse): an old unreferenced file is
// listed by the dry run and deleted with Apply; a young one, live data files and metadata stay.
func TestGCEmbedded(t *testing.T) {
	e := newEnv(t, nil)
	want := e.writeSegments("events", 3, 500, 1, time.Now().Add(-time.Hour))
	ctx := context.Background()
	if _, err := e.drain.Cycle(ctx, true); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lake.LoadTable(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	live, err := lake.LiveFiles(ctx, tbl)
	if err != nil || len(live) == 0 {
		t.Fatalf("live files: %d, %v", len(live), err)
	}
	dataDir := strings.TrimPrefix(lake.DataDir(tbl, live[0].Partition), "file://")
	old := filepath.Join(dataDir, "g0000-old-uncommitted.parquet")
	young := filepath.Join(dataDir, "g0000-young-uncommitted.parquet")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte("left by a crash"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Everything the drain wrote is older than the limit too, so only references keep it.
	past := time.Now().Add(-2 * time.Hour)
	filepath.Walk(strings.TrimPrefix(tbl.Location(), "file://"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && p != young {
			os.Chtimes(p, past, past)
		}
		return nil
	})

	dry, err := orphans.Run(ctx, e.lake, orphans.Options{Keep: puffinidx.Referenced, OlderThan: time.Hour, MinAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry) != 1 || len(dry[0].Orphans) != 1 || !strings.HasSuffix(dry[0].Orphans[0].Path, "g0000-old-uncommitted.parquet") {
		t.Fatalf("dry run: %+v; want exactly the old uncommitted file", dry)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("the dry run deleted %s: %v", old, err)
	}
	applied, err := orphans.Run(ctx, e.lake, orphans.Options{Keep: puffinidx.Referenced, OlderThan: time.Hour, MinAge: time.Hour, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied[0].Deleted) != 1 {
		t.Fatalf("apply deleted %v", applied[0].Deleted)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("%s still there after apply (%v)", old, err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatalf("gc removed a file younger than the limit: %v", err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("after gc the table holds %d rows, want %d", got.Rows, want.Rows)
	}
	if _, err := orphans.Run(ctx, e.lake, orphans.Options{Keep: puffinidx.Referenced}); err == nil {
		t.Fatal("gc without a positive --older-than ran")
	}
}

// TestGCFloor: gc refuses an age limit below its floor (24h unless lowered), naming the floor, and
// a floor below twice the drain's commit attempts under the commit deadline; the old file of
// TestGCEmbedded's kind is left alone by every refused run.
func TestGCFloor(t *testing.T) {
	e := newEnv(t, nil)
	e.writeSegments("events", 1, 100, 1, time.Now().Add(-time.Hour))
	ctx := context.Background()
	if _, err := e.drain.Cycle(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opts orphans.Options
		want string // "" accepted
	}{
		{orphans.Options{OlderThan: 3 * time.Second}, "--older-than 3s is below gc's floor of 1d"},
		{orphans.Options{OlderThan: 23 * time.Hour}, "--older-than 23h is below gc's floor of 1d"},
		{orphans.Options{OlderThan: 24 * time.Hour}, ""},
		{orphans.Options{OlderThan: time.Hour, MinAge: 2 * time.Hour}, "--older-than 1h is below gc's floor of 2h"},
		// The floor itself: at least 2 x 6 attempts x the commit deadline (2m by default).
		{orphans.Options{OlderThan: 20 * time.Minute, MinAge: 20 * time.Minute}, "--min-age-floor 20m is below 24m"},
		{orphans.Options{OlderThan: 24 * time.Minute, MinAge: 24 * time.Minute}, ""},
		{orphans.Options{OlderThan: 2 * time.Second, MinAge: 2 * time.Second, CommitTimeout: 250 * time.Millisecond}, "--min-age-floor 2s is below 3s"},
		{orphans.Options{OlderThan: 3 * time.Second, MinAge: 3 * time.Second, CommitTimeout: 250 * time.Millisecond}, ""},
	} {
		c.opts.Keep = puffinidx.Referenced
		_, err := orphans.Run(ctx, e.lake, c.opts)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.opts, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, orphans.ErrTooYoung)):
			t.Errorf("%+v: error %v, want one saying %q", c.opts, err, c.want)
		}
	}
}
