package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/duration"
	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/peerhttp"
)

// Bounds of --group-commit-interval: below 100ms a commit per table takes most of the catalog's
// time for little batching; above 60s rows wait a minute past their batch age.
const (
	minGroupCommitInterval = 100 * time.Millisecond
	maxGroupCommitInterval = 60 * time.Second
)

// minMarkPruneAfter is the least --mark-prune-after but 0: far above orphans.HandoffMaxAge of any
// commit deadline in use, so no request still in flight can outlive its stream's mark.
const minMarkPruneAfter = 24 * time.Hour

// groupCommitOptions are the options of group commit, manifest merging and mark pruning
// (docs/design/group-commit.md sections 5 and 6.4), last in the documentation's order.
func groupCommitOptions() []Option {
	return []Option{
		{"group-commit", "SIGLAKE_GROUP_COMMIT", "true", "commitBatch.groupCommit.enabled",
			"Hand each drain batch to its table's committer (the table's maintenance owner), which commits the batches of every pod together at most once per interval; a pod commits directly when no committer answers in time. Effective with gossip (`--gossip-bind`), a gossip key (`--gossip-key-file`) and no key migration: the batches travel as gossip messages to the table's lease owner (docs/design/group-commit.md). Without gossip, effective with catalog claims (`--catalog-claim`), a key file (`--gossip-key-file`) and an advertised address (`--peer-advertise`): a committer claim elects each table's committer and the batches travel signed over HTTP (docs/group-commit.md).",
			setBool(func(c *Config) *bool { return &c.GroupCommit })},
		{"group-commit-interval", "SIGLAKE_GROUP_COMMIT_INTERVAL", "1s", "commitBatch.groupCommit.interval",
			"How often a committer commits a table's queued batches, 100ms to 60s.",
			setDurationIn(func(c *Config) *time.Duration { return &c.GroupCommitInterval }, minGroupCommitInterval, maxGroupCommitInterval, false)},
		{"group-commit-max-wait", "SIGLAKE_GROUP_COMMIT_MAX_WAIT", "4s", "commitBatch.groupCommit.maxWait",
			"The longest a table's oldest queued batch waits for others before the committer commits the table: a busy table then commits fewer, larger groups (fewer metadata objects per GB), a quiet one at most this much later. 0, or not above `--group-commit-interval`: a commit every interval. 0 or 100ms to 60s; lowered, with a warning at start, where pods' answer timeout (3 intervals + the max wait past one + 2s) would reach `--group-commit-fallback-after`.",
			setDurationIn(func(c *Config) *time.Duration { return &c.GroupCommitMaxWait }, minGroupCommitInterval, maxGroupCommitInterval, true)},
		{"group-commit-target-mb", "SIGLAKE_GROUP_COMMIT_TARGET_MB", "1024", "commitBatch.groupCommit.targetMb",
			"A committer commits a table at its next interval without waiting out `--group-commit-max-wait` once its queued batches hold this many MiB of data files.",
			setPosInt(func(c *Config) *int { return &c.GroupCommitTargetMB })},
		{"group-commit-max-files", "SIGLAKE_GROUP_COMMIT_MAX_FILES", "512", "commitBatch.groupCommit.maxFiles",
			"A committer commits a table at once when its queued batches hold this many data files, and one group commit takes at most this many (one batch is never split).",
			setPosInt(func(c *Config) *int { return &c.GroupCommitMaxFiles })},
		{"group-commit-queue-max", "SIGLAKE_GROUP_COMMIT_QUEUE_MAX", strconv.Itoa(commit.DefaultMaxRequests), "commitBatch.groupCommit.queueMax",
			"Most batches a committer holds over all its tables (and at most 64 MiB of them); beyond it pods are told to slow down and keep their batches in the WAL.",
			setPosInt(func(c *Config) *int { return &c.GroupCommitQueueMax })},
		{"group-commit-fallback-after", "SIGLAKE_GROUP_COMMIT_FALLBACK_AFTER", "30s", "commitBatch.groupCommit.fallbackAfter",
			fmt.Sprintf("A pod that has not heard from its table's committer for this long commits the batch directly (the stream mark decides if both land). With gossip or catalog claims on, at most %d times `--commit-timeout`, the oldest batch a committer still commits.", orphans.FileCommitAttempts),
			setDuration(func(c *Config) *time.Duration { return &c.GroupCommitFallbackAfter }, true)},
		{"peer-advertise", "SIGLAKE_PEER_ADVERTISE", "", "",
			"Group commit without gossip (`--catalog-claim` on, `--gossip-bind` empty): the host:port other pods reach this process's `--http-addr` listener at, where they send their batches when it holds a table's committer claim. Empty: `$POD_IP` (the chart sets it) with the `--http-addr` port; without either, group commit stays off with the reason in /debug/status (docs/group-commit.md).",
			func(c *Config, v string) error {
				if v != "" {
					if err := peerhttp.CheckAddr(v); err != nil {
						return err
					}
				}
				c.PeerAdvertise = v
				return nil
			}},
		{"manifest-merge-min-count", "SIGLAKE_MANIFEST_MERGE_MIN_COUNT", "100", "compactor.manifestMerge.minCount",
			"Manifests at which a table's commit merges them (Iceberg's `commit.manifest.min-count-to-merge`), so metadata does not grow with every commit; 0 turns merging off.",
			setNonNegInt(func(c *Config) *int { return &c.ManifestMergeMinCount })},
		{"mark-prune-after", "SIGLAKE_MARK_PRUNE_AFTER", "7d", "compactor.markPruneAfter",
			"The committer removes the stream mark of a stream that committed nothing for this long (pods with random names would otherwise leave one in every table's metadata for ever); at least 24h, or 0 to keep marks for ever. A value below twice orphan gc's floor under `--commit-timeout` (24 times it: 48 minutes at the default 2m) is raised to it, with a warning at start: a mark must outlive every batch a committer may still hold.",
			setPruneAfter(func(c *Config) *time.Duration { return &c.MarkPruneAfter })},
	}
}

// GroupCommitMaxWait is --group-commit-max-wait as the process uses it, and whether it was
// lowered. A pod waits for its answer 3 intervals, the committer's max wait past one interval and
// 2 s (commit.Client's answer timeout), and commits directly once it heard nothing for
// --group-commit-fallback-after: a max wait whose answer timeout reaches that bound would send
// every batch of a quiet table to a direct commit, so it is lowered to the largest that keeps the
// timeout below the bound (no wait past the interval when none does).
func GroupCommitMaxWait(c Config) (time.Duration, bool) {
	wait := c.GroupCommitMaxWait
	if wait <= c.GroupCommitInterval {
		return wait, false
	}
	room := c.GroupCommitFallbackAfter - 3*c.GroupCommitInterval - 2*time.Second // for the wait past one interval
	if wait-c.GroupCommitInterval < room {
		return wait, false
	}
	return max(c.GroupCommitInterval+room-time.Second, 0), true
}

// RangeError is a duration in the one syntax that is outside its option's range: the value
// parsed, the option refuses it.
type RangeError struct{ Accepted string }

func (e *RangeError) Error() string { return "accepted: " + e.Accepted }

// setDurationIn reads a duration from lo to hi (0 too when zeroOK).
func setDurationIn(field func(*Config) *time.Duration, lo, hi time.Duration, zeroOK bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := duration.Parse(v)
		if err != nil {
			return fmt.Errorf("accepted: a duration from %s to %s such as 500ms, 1s or 10s (%s)", orphans.FormatAge(lo), orphans.FormatAge(hi), duration.Units)
		}
		if (d < lo || d > hi) && !(zeroOK && d == 0) {
			accepted := fmt.Sprintf("a duration from %s to %s", orphans.FormatAge(lo), orphans.FormatAge(hi))
			if zeroOK && lo > 0 {
				accepted = "0 or " + accepted
			}
			return &RangeError{accepted}
		}
		*field(c) = d
		return nil
	}
}

// setPruneAfter reads --mark-prune-after: 0, or at least minMarkPruneAfter.
func setPruneAfter(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := duration.Parse(v)
		if err != nil {
			return errors.New("accepted: 0 (never) or a duration of at least 24h such as 7d or 2w (" + duration.Units + ")")
		}
		if d != 0 && d < minMarkPruneAfter {
			return &RangeError{"0 (never) or a duration of at least 24h such as 7d or 2w"}
		}
		*field(c) = d
		return nil
	}
}

// groupCommitCheck: a pod must fall back before its committer would refuse the request as too
// old (orphans.HandoffMaxAge), or it waits for an answer that can only be "expired". Checked only
// where group commit can run (gossip on, or catalog claims electing committers without it):
// elsewhere the option does nothing.
func groupCommitCheck(c Config) error {
	if !c.GroupCommit || c.GossipBind == "" && !c.CatalogClaim {
		return nil
	}
	if most := orphans.HandoffMaxAge(c.CommitTimeout); c.GroupCommitFallbackAfter > most {
		f := orphans.FormatAge
		return fmt.Errorf("--group-commit-fallback-after / SIGLAKE_GROUP_COMMIT_FALLBACK_AFTER %s is above %s, the oldest batch a committer commits under --commit-timeout / SIGLAKE_COMMIT_TIMEOUT %s (%d attempts): accepted: at most %s, or a longer --commit-timeout",
			f(c.GroupCommitFallbackAfter), f(most), f(c.CommitTimeout), orphans.FileCommitAttempts, f(most))
	}
	return nil
}

// PeerAddr is the address this process advertises for group commit without gossip:
// --peer-advertise, else $POD_IP (getenv) with httpAddr's port (the listener's, after a port 0
// resolved). "" with the reason when there is none.
func PeerAddr(c Config, httpAddr string, getenv func(string) string) (addr, reason string) {
	addr, reason = peerAddr(c, httpAddr, getenv)
	if reason != "" {
		return "", reason
	}
	// A loopback listener advertised at another address would take no pod's hand-off.
	lh, _, _ := net.SplitHostPort(httpAddr)
	ah, _, _ := net.SplitHostPort(addr)
	if l, a := net.ParseIP(lh), net.ParseIP(ah); l != nil && l.IsLoopback() && (a == nil || !a.IsLoopback()) {
		return "", fmt.Sprintf("--http-addr / SIGLAKE_HTTP_ADDR %s listens on loopback only, so other pods cannot reach %s: bind it to 0.0.0.0:<port> (the chart does)", httpAddr, addr)
	}
	return addr, ""
}

func peerAddr(c Config, httpAddr string, getenv func(string) string) (addr, reason string) {
	if c.PeerAdvertise != "" {
		return c.PeerAdvertise, ""
	}
	ip := getenv("POD_IP")
	if ip == "" {
		return "", "no address to advertise: set --peer-advertise / SIGLAKE_PEER_ADVERTISE (or POD_IP) to the host:port other pods reach --http-addr at"
	}
	_, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return "", fmt.Sprintf("--http-addr %q has no port to advertise with POD_IP: set --peer-advertise / SIGLAKE_PEER_ADVERTISE", httpAddr)
	}
	addr = net.JoinHostPort(ip, port)
	if err := peerhttp.CheckAddr(addr); err != nil {
		return "", fmt.Sprintf("POD_IP %q: %v", ip, err)
	}
	return addr, ""
}
