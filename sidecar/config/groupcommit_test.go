package config

import (
	"strings"
	"testing"
	"time"
)

func loadWith(args []string, env map[string]string) (Config, error) {
	return Load(args, func(k string) string { return env[k] })
}

// TestGroupCommitDefaults: group commit is on by default, with the design's values.
func TestGroupCommitDefaults(t *testing.T) {
	c, err := loadWith(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.GroupCommit || c.GroupCommitInterval != time.Second || c.GroupCommitMaxFiles != 512 || c.GroupCommitQueueMax != 4096 ||
		c.GroupCommitFallbackAfter != 30*time.Second || c.ManifestMergeMinCount != 100 || c.MarkPruneAfter != 7*24*time.Hour {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = loadWith([]string{"--group-commit=off", "--manifest-merge-min-count", "0", "--mark-prune-after", "0"}, nil)
	if err != nil || c.GroupCommit || c.ManifestMergeMinCount != 0 || c.MarkPruneAfter != 0 {
		t.Fatalf("off: %v %+v", err, c)
	}
}

// TestGroupCommitBounds: values outside an option's range fail Load naming the option and what is
// accepted; the boundaries themselves load.
func TestGroupCommitBounds(t *testing.T) {
	for _, ok := range [][]string{
		{"--group-commit-max-wait", "0"}, {"--group-commit-max-wait", "4s"}, {"--group-commit-max-wait", "1m"}, {"--group-commit-target-mb", "1"},
		{"--group-commit-interval", "100ms"}, {"--group-commit-interval", "60s"}, {"--group-commit-interval", "1m"},
		{"--mark-prune-after", "24h"}, {"--mark-prune-after", "1d"}, {"--group-commit-max-files", "1"},
	} {
		if _, err := loadWith(ok, nil); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--group-commit-interval", "99ms"}, "SIGLAKE_GROUP_COMMIT_INTERVAL: accepted: a duration from 100ms to 1m"},
		{[]string{"--group-commit-interval", "61s"}, "SIGLAKE_GROUP_COMMIT_INTERVAL: accepted: a duration from 100ms to 1m"},
		{[]string{"--group-commit-interval", "0"}, "SIGLAKE_GROUP_COMMIT_INTERVAL: accepted"},
		{[]string{"--group-commit-max-wait", "50ms"}, "SIGLAKE_GROUP_COMMIT_MAX_WAIT: accepted: 0 or a duration from 100ms to 1m"},
		{[]string{"--group-commit-max-wait", "2m"}, "SIGLAKE_GROUP_COMMIT_MAX_WAIT: accepted: 0 or a duration from 100ms to 1m"},
		{[]string{"--group-commit-target-mb", "0"}, "SIGLAKE_GROUP_COMMIT_TARGET_MB: accepted"},
		{[]string{"--group-commit-interval", "fast"}, "SIGLAKE_GROUP_COMMIT_INTERVAL: accepted"},
		{[]string{"--mark-prune-after", "23h"}, "SIGLAKE_MARK_PRUNE_AFTER: accepted: 0 (never) or a duration of at least 24h"},
		{[]string{"--group-commit-max-files", "0"}, "SIGLAKE_GROUP_COMMIT_MAX_FILES: accepted: a whole number >= 1"},
		{[]string{"--group-commit-queue-max", "0"}, "SIGLAKE_GROUP_COMMIT_QUEUE_MAX: accepted: a whole number >= 1"},
		{[]string{"--group-commit-fallback-after", "0"}, "SIGLAKE_GROUP_COMMIT_FALLBACK_AFTER: accepted"},
		{[]string{"--manifest-merge-min-count", "-1"}, "SIGLAKE_MANIFEST_MERGE_MIN_COUNT: accepted"},
		{[]string{"--group-commit", "maybe"}, "--group-commit / SIGLAKE_GROUP_COMMIT"},
	} {
		_, err := loadWith(tc.args, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestFallbackAfterWithinHandoffAge: with gossip on, a pod must fall back before its committer
// would refuse the batch as too old (6 x --commit-timeout); without gossip, or with group commit
// off, the option does nothing and is not checked.
func TestFallbackAfterWithinHandoffAge(t *testing.T) {
	gossip := map[string]string{"SIGLAKE_GOSSIP_BIND": "127.0.0.1:7946", testMinCommitTimeoutEnv: "1s"}
	_, err := loadWith([]string{"--commit-timeout", "2s"}, gossip)
	want := "--group-commit-fallback-after / SIGLAKE_GROUP_COMMIT_FALLBACK_AFTER 30s is above 12s, the oldest batch a committer commits under --commit-timeout / SIGLAKE_COMMIT_TIMEOUT 2s (6 attempts): accepted: at most 12s"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("fallback 30s, commit timeout 2s: %v, want %q", err, want)
	}
	for _, args := range [][]string{
		{"--commit-timeout", "2s", "--group-commit-fallback-after", "12s"},
		{"--commit-timeout", "2s", "--group-commit=false"},
		{"--commit-timeout", "5s"}, // the least commit timeout without the test hook: 30s fits
	} {
		if _, err := loadWith(args, gossip); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, err := loadWith([]string{"--commit-timeout", "2s"}, map[string]string{testMinCommitTimeoutEnv: "1s"}); err != nil {
		t.Errorf("without gossip: %v", err)
	}
	// Committers elected by catalog claims: checked as with gossip.
	if _, err := loadWith([]string{"--commit-timeout", "2s", "--catalog-claim", "true"}, map[string]string{testMinCommitTimeoutEnv: "1s"}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("catalog claims, no gossip: %v, want %q", err, want)
	}
}

// TestPeerAddr: the advertised address is --peer-advertise, else POD_IP with the listener's port;
// neither is a reason naming the option; a bad --peer-advertise fails at start with what is
// accepted.
func TestPeerAddr(t *testing.T) {
	env := func(ip string) func(string) string {
		return func(k string) string {
			if k == "POD_IP" {
				return ip
			}
			return ""
		}
	}
	for _, c := range []struct {
		cfg       Config
		http, ip  string
		want, why string
	}{
		{Config{PeerAdvertise: "ingest-0.siglake:8080"}, "0.0.0.0:9090", "10.0.0.1", "ingest-0.siglake:8080", ""},
		{Config{}, "0.0.0.0:9090", "10.0.0.1", "10.0.0.1:9090", ""},
		{Config{}, "[::]:9090", "fd00::7", "[fd00::7]:9090", ""},
		{Config{}, "0.0.0.0:9090", "", "", "--peer-advertise / SIGLAKE_PEER_ADVERTISE"},
		{Config{}, "127.0.0.1:9090", "127.0.0.1", "127.0.0.1:9090", ""}, // one host: tests
		{Config{}, "127.0.0.1:9090", "10.0.0.1", "", "listens on loopback only"},
		{Config{PeerAdvertise: "ingest-0.siglake:8080"}, "127.0.0.1:9090", "", "", "listens on loopback only"},
	} {
		got, why := PeerAddr(c.cfg, c.http, env(c.ip))
		if got != c.want || (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%+v http %s POD_IP %q: %q %q, want %q %q", c.cfg, c.http, c.ip, got, why, c.want, c.why)
		}
	}
	_, err := loadWith([]string{"--peer-advertise", "10.0.0.1"}, nil)
	if err == nil || !strings.Contains(err.Error(), "--peer-advertise") || !strings.Contains(err.Error(), "accepted: host:port") {
		t.Fatalf("--peer-advertise without a port: %v", err)
	}
}

// TestMaxWaitBelowFallback: a max wait whose answer timeout (3 intervals, the wait past one, 2 s)
// reaches the fallback bound is lowered to the largest that stays below it, or to none past the
// interval when none does; one that fits is kept.
func TestMaxWaitBelowFallback(t *testing.T) {
	for _, c := range []struct {
		maxWait, interval, fallback, want time.Duration
		lowered                           bool
	}{
		{4 * time.Second, time.Second, 30 * time.Second, 4 * time.Second, false},
		{25 * time.Second, time.Second, 30 * time.Second, 25 * time.Second, false}, // 3 + 24 + 2 = 29 < 30
		{40 * time.Second, time.Second, 30 * time.Second, 25 * time.Second, true},
		{40 * time.Second, time.Second, 45 * time.Second, 40 * time.Second, false},
		{4 * time.Second, time.Second, time.Second, 0, true},
		{4 * time.Second, time.Minute, 30 * time.Second, 4 * time.Second, false}, // not above the interval: no wait
	} {
		cfg := Config{GroupCommitMaxWait: c.maxWait, GroupCommitInterval: c.interval, GroupCommitFallbackAfter: c.fallback}
		got, lowered := GroupCommitMaxWait(cfg)
		if got != c.want || lowered != c.lowered {
			t.Errorf("max wait %v, interval %v, fallback %v: %v (lowered %v), want %v (%v)", c.maxWait, c.interval, c.fallback, got, lowered, c.want, c.lowered)
		}
		if lowered && got > c.interval && 3*c.interval+got-c.interval+2*time.Second >= c.fallback {
			t.Errorf("lowered to %v: pods still wait to the fallback bound", got)
		}
	}
}
