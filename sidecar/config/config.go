// Package config is the sidecar's configuration: every option with its flag, environment
// variable, default and Helm value (the one source of docs/configuration.md), how values parse,
// and the checks that run when the configuration loads.
package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/gossip/joinlist"
	gossipkeys "github.com/siglake/siglake/gossip/keys"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/duration"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/retention"
)

// Role says which loops a process runs (spec "Roles").
type Role string

const (
	RoleAll         Role = "all"         // drain and maintenance
	RoleDrain       Role = "drain"       // drain only; never owns a maintenance lease
	RoleMaintenance Role = "maintenance" // maintenance only; drains nothing
)

// Drains reports whether the role runs the WAL drain.
func (r Role) Drains() bool { return r == RoleAll || r == RoleDrain }

// Maintains reports whether the role runs table maintenance.
func (r Role) Maintains() bool { return r == RoleAll || r == RoleMaintenance }

// Config is everything a `siglake compactor` process is told. Every field is set from exactly one
// Option below; Options() is the single source for flags, environment variables, defaults and
// docs/configuration.md.
type Config struct {
	// Role says which loops run. Default all (--role): one process per pod drains and maintains;
	// drain or maintenance split the work across deployments (the spec's roles).
	Role Role
	// WALDir is where ingest seals WAL segments, on the volume both containers mount. Default
	// /var/lib/siglake/wal (--wal-dir), the chart's mount path. With CatalogClaim, a root of streams.
	WALDir string
	// Catalog is the Iceberg catalog: sqlite:PATH, postgres://... or rest+http(s)://... Default
	// sqlite:/var/lib/siglake/catalog.db (--catalog): the embedded catalog runs with nothing else.
	Catalog string
	// Warehouse is where data files go: a local path, file://... or s3://bucket/prefix. Default
	// /var/lib/siglake/warehouse (--warehouse), beside the embedded catalog.
	Warehouse string
	// Namespace is the Iceberg namespace of siglake's tables. Default siglake (--namespace).
	Namespace string
	// HTTPAddr serves /metrics, /debug/status, /healthz and /readyz. Default 127.0.0.1:9464
	// (--http-addr): loopback unless the deployment exposes it.
	HTTPAddr string

	// S3Endpoint is the URL of an S3-compatible store. Default empty (--s3-endpoint): AWS's own.
	S3Endpoint string
	// S3Region is the S3 region. Default us-east-1 (--s3-region).
	S3Region string
	// S3AccessKey and S3SecretKey are static S3 credentials. Default empty (--s3-access-key,
	// --s3-secret-key): the standard AWS_* environment from a Secret is preferred.
	S3AccessKey string
	S3SecretKey string
	// S3PathStyle addresses buckets by path, not host name. Default true (--s3-path-style): most
	// S3-compatible servers need it.
	S3PathStyle bool

	// CommitBatchTargetBytes closes a table's drain batch once its segments reach this size; 0
	// commits each segment alone. Default 32 MiB (--commit-batch-target-mb): fewer catalog commits
	// and fewer, larger generation-0 files (spec "Commit-accumulation batching").
	CommitBatchTargetBytes int64
	// CommitBatchMaxAge commits a batch once its oldest segment is this old, even below the target.
	// Default 10 s (--commit-batch-max-age-secs): bounds how late rows reach the lake.
	CommitBatchMaxAge time.Duration
	// WALSegmentMaxBytes quarantines a sealed segment larger than this as oversize, from its
	// size alone, without reading it: the drain reads a segment whole, so a stray 1 GiB file would
	// take a pod with a 1 GiB limit down and block the segments behind it. Default 64 MiB
	// (--wal-segment-max-mb): 8 times the Go writer's roll size, 16 times walgen's.
	WALSegmentMaxBytes int64
	// DrainPollInterval is how often the drain scans the WAL directory. Default 1 s
	// (--drain-poll-interval): a scan is one directory listing, and the batch age decides commits.
	DrainPollInterval time.Duration
	// TargetFileBytes splits output files (only where the timestamp changes) at this size.
	// Default 256 MiB (--target-file-mb): the usual Iceberg target, past which another merge buys
	// little read speed for its write cost (docs/compaction.md).
	TargetFileBytes int64
	// SplitSparse also cuts drain and rewrite outputs where the row density falls below this
	// fraction of the median density, so late rows get files of their own instead of stretching
	// on-time files back by minutes. Default 0.05 (--split-sparse), what the simulator measured
	// best (docs/compaction.md, "Late rows"); 0 cuts by size only.
	SplitSparse float64

	// CatalogClaim makes WALDir a root of stream subdirectories shared by several drain
	// processes, each draining the streams whose catalog claim it holds (docs/claims.md).
	// Default off (--catalog-claim): each pod drains its own WAL.
	CatalogClaim bool
	// CatalogClaimTTL is how long an unrenewed claim lasts before another process may take it;
	// renewed every third. Default 30 s (--catalog-claim-ttl): one claim commit per process per 10 s.
	CatalogClaimTTL time.Duration

	// ReclusterInterval is the maintenance tick for file rewrites; 0 disables rewrites but not
	// the other maintenance. Default 10 s (--recluster-interval-secs), the planner's, the L0 check.
	ReclusterInterval time.Duration
	// Leveled selects leveled compaction; false is the legacy flat whole-partition pass. Default
	// true (--leveled), the planner's.
	Leveled bool
	// MaxOverlapDepth triggers a rewrite of the deepest overlapping cluster above this depth.
	// Default 12 (--max-overlap-depth), the planner's and the spec's.
	MaxOverlapDepth int
	// MaxSealedForRecluster is the sealed-WAL backlog (segments) above which draining gets
	// priority over maintenance. Default 256 (--max-sealed-for-recluster), the spec's.
	MaxSealedForRecluster int
	// BackpressureCompactEvery runs a restricted L0 pass every Nth backlogged cycle, so L0 does not
	// pile up under a long backlog; 0 disables it. Default 4 (--backpressure-compact-every).
	BackpressureCompactEvery int
	// LevelMaxGen takes files of this generation out of level selection; 0 = no cap. Default 8
	// (--level-max-gen): caps write amplification on slow tables (docs/compaction.md).
	LevelMaxGen int
	// MaxFanIn is the most input files one rewrite bin takes, 2 to 1024. Default 32
	// (--max-fan-in), the planner's: bounds open inputs and merge memory per bin.
	MaxFanIn int
	// SnapshotExpireInterval is how often snapshots are expired; 0 disables expiry. Default 60 s
	// (--snapshot-expire-interval-secs): drain commits add snapshots every few seconds.
	SnapshotExpireInterval time.Duration
	// SnapshotRetain is how many of the latest snapshots expiry keeps. Default 100
	// (--snapshot-retain): room for time travel and readers of a recent snapshot.
	SnapshotRetain int
	// IndexFooterMaxBytes is the largest inverted index kept in a Parquet footer, per column.
	// Default 1 MiB (--index-footer-max-bytes): footers stay cheap to read.
	IndexFooterMaxBytes int64
	// InvertedIndex writes footer inverted indexes on in-memory rewrites. Default true
	// (--inverted-index): search prunes files by them.
	InvertedIndex bool
	// IndexRebuild registers Puffin index sidecars for rewrite outputs that lack an index (streamed
	// merges write none). Default false (--index-rebuild): it costs a second read of each output.
	IndexRebuild bool
	// MergeMemoryBytes is the merges' decoded-memory budget; 0 derives it from GOMEMLIMIT or the
	// container limit. Default 0 (--merge-memory-bytes): the limit is already set per pod.
	MergeMemoryBytes int64
	// MemoryBudgetBytes is the process memory budget every loop that holds data takes its share
	// of (sidecar/membudget); 0 derives it from GOMEMLIMIT or the container limit (0.6 of it).
	// Default 0 (--memory-budget-bytes).
	MemoryBudgetBytes int64
	// MergeChunkRows is how many rows the page-bounded merge decodes at a time, which bounds its
	// memory whatever the input size. Default 64 Ki rows (--merge-chunk-rows), merge's default.
	MergeChunkRows int64
	// MergeSpliceMinRows is the smallest row group the splice merge copies without re-encoding;
	// smaller ones are re-encoded so outputs do not keep small row groups. Default 64 Ki rows
	// (--merge-splice-min-rows), half the row-group length; 0 turns the splice off (stored as -1,
	// merge's "off", since merge reads 0 as its default).
	MergeSpliceMinRows int64
	// MergeSpliceVerify reads the pages of every row group the splice copies (headers parsed,
	// data decompressed, value counts checked), so damaged input fails the rewrite instead of
	// being copied on. Default true (--merge-splice-verify); off saves about half the splice's CPU.
	MergeSpliceVerify bool
	// MergeParquetEncoder is the library that encodes the rows of every data file this process
	// writes (merges and the drain; merge/writer.Encoder). Default auto
	// (--merge-parquet-encoder): parquet-go for the drain, arrow-go for merges on Arrow rows,
	// each where it measured faster; arrow (arrow-go for every file, the k-way merge on
	// parquet-go values refused) stays selectable until parquet-go has run a release.
	MergeParquetEncoder writer.Encoder
	// MergeParquetDecoder is the library the k-way merge decodes and merges its inputs with
	// (merge.Decoder). Default parquet-go (--merge-parquet-decoder; 0.86x-0.92x arrow-go's CPU on
	// every shape it takes); bins it cannot take stay on arrow-go (docs/file-format.md, "Decoders").
	MergeParquetDecoder merge.Decoder

	// DeleteTasks runs the idle-cycle delete-task sweep over owned tables (docs/deletes.md);
	// requests are recorded either way. Default true (--delete-tasks), the spec's.
	DeleteTasks bool
	// DeleteCancelPeriod is how long a recorded deletion request waits before any sweep executes
	// it, so a mistaken one can be withdrawn with siglake delete-cancel. Default 24h
	// (--delete-cancel-period), Loki's delete_request_cancel_period.
	DeleteCancelPeriod time.Duration
	// DeleteSweepMaxFiles and DeleteSweepMaxBytes bound the candidate files one sweep of a table
	// examines, so a big request cannot starve the drain. Defaults 8 files (--delete-sweep-max-files)
	// and 1024 MiB (--delete-sweep-max-mb); at least one file is always examined.
	DeleteSweepMaxFiles int
	DeleteSweepMaxBytes int64

	// SkipAfterFailures is how many permanent rewrite failures (a corrupt, truncated, missing or
	// unreadable input) set the input aside. Default 3 (--compactor-skip-after-failures).
	SkipAfterFailures int
	// FailureBackoff is the first wait before a bin whose rewrite failed is tried again (doubling
	// to 30 min for transient causes). Default 30 s (--compactor-failure-backoff-secs).
	FailureBackoff time.Duration

	// RetentionPeriod is the period of tables without a policy of their own (docs/retention.md).
	// Default 0 (--retention-period): keep for ever, since deleting data is never a default.
	RetentionPeriod time.Duration
	// RetentionInterval is how often owned tables get a retention run; 0 disables retention.
	// Default 3600 s (--retention-interval-secs): cutoffs move by the hour, not the second.
	RetentionInterval time.Duration
	// RetentionDeleteDelay is how long objects retention removed stay in storage, for readers
	// still on an older snapshot. Default 2h (--retention-delete-delay).
	RetentionDeleteDelay time.Duration
	// RetentionMaxFiles and RetentionMaxBytes cap one run's rewrites of a table, so retention
	// cannot starve the drain. Defaults 8 files and 1024 MiB; drops (metadata only) are not capped.
	RetentionMaxFiles int
	RetentionMaxBytes int64

	// FoldMaxGroups bounds the groups a fold of a rollup table holds for one bucket before it
	// writes them out as partial rows. Default 262144 (--fold-max-groups), some 25 MB.
	FoldMaxGroups int
	// FoldMinFiles is the count of unfolded files at which a rollup table's partition gets a
	// fold bin. Default 8 (--fold-min-files), the level trigger.
	FoldMinFiles int

	// NodeName is the gossip member name. Default empty (--node-name): the hostname, which is the
	// pod name on Kubernetes and so stable across restarts.
	NodeName string
	// GossipBind is the gossip host:port. Default empty (--gossip-bind): no gossip, and this
	// process owns every table, which is right for a single process.
	GossipBind string
	// GossipAdvertise is the address peers reach this member at. Default empty
	// (--gossip-advertise): the bind address; set it to the pod IP.
	GossipAdvertise string
	// GossipJoin lists the peers or DNS names (a headless Service) to join. Default none
	// (--gossip-join, comma-separated).
	GossipJoin []string
	// GossipKeyFile holds the gossip encryption keys, one base64 key per line, the first sent with.
	// Default empty (--gossip-key-file): plaintext gossip, which any process that reaches the port
	// can join; the process warns at start. Re-read while running so a rotation needs no restart.
	GossipKeyFile string
	// GossipClusterLabel is put on every gossip packet; members refuse other labels. Default empty
	// (--gossip-cluster-label), in the chart too: adding it splits a running cluster.
	GossipClusterLabel string
	// GossipKeyMigration is a step of bringing keys to a keyless cluster: accept (send plaintext,
	// accept both), send (send encrypted, accept both). Default empty (--gossip-key-migration):
	// plaintext refused.
	GossipKeyMigration string
	// GossipSettle is how long a member's view must be stable before it acts as a table's owner.
	// Default 5 s (--gossip-settle-secs): a joining view converges first (docs/gossip.md).
	GossipSettle time.Duration
	// GossipRejoin is how often the join list is re-resolved and re-joined. Default 30 s
	// (--gossip-rejoin-secs): a member that started alone finds the others.
	GossipRejoin time.Duration

	// GossipProbeInterval is how often a member probes one random peer (memberlist). Default 1 s
	// (--gossip-probe-interval), memberlist's LAN default: failure detection in seconds.
	GossipProbeInterval time.Duration
	// GossipProbeTimeout is how long a direct probe waits for its ack before indirect probes.
	// Default 500 ms (--gossip-probe-timeout), memberlist's LAN default; below the interval.
	GossipProbeTimeout time.Duration
	// GossipSuspicionMult scales how long a suspected member may refute before it is declared
	// dead. Default 4 (--gossip-suspicion-mult), memberlist's LAN default.
	GossipSuspicionMult int

	// LogFormat is json, console or auto. Default auto (--log-format): console on a terminal,
	// JSON in a container.
	LogFormat string
	// LogLevel is debug, info, warn or error. Default info (--log-level).
	LogLevel string
	// ShutdownTimeout is how long, on SIGTERM, the in-flight commit may take before it is
	// abandoned (its segments stay in the WAL). Default 30 s (--shutdown-timeout): below the
	// chart's 60 s termination grace period.
	ShutdownTimeout time.Duration
	// CommitTimeout bounds each catalog commit attempt; past it the attempt is abandoned (its
	// outcome unknown, its files kept) and retried. Default 2m (--commit-timeout): far above a
	// healthy commit, far below gc's 24h floor, which must stay above twice the attempts' total.
	CommitTimeout time.Duration

	// GroupCommit hands each drain batch to its table's committer (the table's maintenance owner),
	// which commits the batches of every pod together (docs/design/group-commit.md). Default true
	// (--group-commit), effective only with gossip, a gossip key and no key migration: the hand-off
	// travels as gossip messages, and an unauthenticated one could move a stream's mark.
	GroupCommit bool
	// GroupCommitInterval is how often a committer commits a table's queued requests, 100ms to 60s.
	// Default 1s (--group-commit-interval): one commit per table per second whatever the pods.
	GroupCommitInterval time.Duration
	// GroupCommitMaxWait is the longest a table's oldest queued request waits for others before
	// its commit; 0 or at most the interval commits every interval (--group-commit-max-wait).
	GroupCommitMaxWait time.Duration
	// GroupCommitTargetMB commits a table at its next interval once its queued batches hold this
	// many MiB of data (--group-commit-target-mb).
	GroupCommitTargetMB int
	// GroupCommitMaxFiles commits at once when a table's queued files reach it, and bounds the files
	// of one group commit. Default 512 (--group-commit-max-files).
	GroupCommitMaxFiles int
	// GroupCommitQueueMax is the most requests a committer holds over all tables; beyond it pods
	// are told busy and keep their batches. Default 4096 (--group-commit-queue-max).
	GroupCommitQueueMax int
	// PeerAdvertise is the host:port other pods reach this process's HTTP listener at, for group
	// commit without gossip (committers elected by catalog claims). Default empty
	// (--peer-advertise): $POD_IP with the --http-addr port.
	PeerAdvertise string
	// GroupCommitFallbackAfter is how long a pod waits without hearing from the committer before it
	// commits the batch itself. Default 30s (--group-commit-fallback-after); at most
	// orphans.HandoffMaxAge(CommitTimeout), past which the committer refuses the request anyway.
	GroupCommitFallbackAfter time.Duration
	// BinLeases has a table's owner offer its rewrite bins to every maintenance sidecar
	// (docs/design/bin-leases.md). Default true (--bin-leases), effective only with gossip, a
	// gossip key and no key migration: a result names files the owner commits into the table.
	BinLeases bool
	// BinLeaseDuration is a lease's least life between renewals, 10s to 10m. Default 2m
	// (--bin-lease-duration).
	BinLeaseDuration time.Duration
	// BinLeaseOwnerWait is how long an offer waits for another worker before the owner's own takes
	// it, 0 to 10m. Default 10s (--bin-lease-owner-wait).
	BinLeaseOwnerWait time.Duration
	// ManifestMergeMinCount is the manifests at which a commit merges them (Iceberg's
	// commit.manifest.min-count-to-merge), so metadata does not grow with every commit; 0 turns
	// merging off. Default 100 (--manifest-merge-min-count), Iceberg's.
	ManifestMergeMinCount int
	// MarkPruneAfter removes the mark of a stream not committed for this long; 0 never. Default 7d
	// (--mark-prune-after): at least 24h, far above any request's age, so no late request can
	// outlive its stream's mark.
	MarkPruneAfter time.Duration

	// BufferAddr is the WAL buffer's own listener (docs/wal-buffer.md); a bare port is loopback.
	// Default empty (--buffer-addr): off, an opt-in read API that serves log rows.
	BufferAddr string
	// BufferRetainAfterDrain keeps committed segments this long so a reader of a slightly older
	// snapshot still gets its rows instead of a 409. Default 30 s (--buffer-retain-after-drain):
	// three times the default commit batch age, so a reader is refused only after missing three
	// commits; 0 removes segments right after their commit.
	BufferRetainAfterDrain time.Duration
	// BufferMaxReaders and BufferMemoryBytes bound the buffer: reads at once (more get 429), and
	// the memory they share (0: a quarter of the merge budget). Defaults 4 and 0.
	BufferMaxReaders  int
	BufferMemoryBytes int64
	// BufferMaxResponseBytes cuts an answer at a segment boundary after this many segment bytes;
	// the reader continues from the answer's marks. Default 256 MiB (--buffer-max-response-mb).
	BufferMaxResponseBytes int64
	// BufferTokenFile holds the bearer tokens the buffer accepts, one per line, re-read when it
	// changes; readers (siglake tail) send its first. Default empty (--buffer-token-file): no token,
	// allowed only on loopback (or with a client CA, or BufferInsecureNoAuth).
	BufferTokenFile string
	// BufferTLSCertFile and BufferTLSKeyFile put the buffer on TLS, which is what keeps a token
	// private on a pod network; readers present them as their client certificate. Default empty.
	BufferTLSCertFile, BufferTLSKeyFile string
	// BufferTLSClientCAFile turns on mutual TLS: a request needs a client certificate it signed.
	BufferTLSClientCAFile string
	// BufferTLSCAFile is for readers: the CA that signed the buffer's certificate (empty: the
	// system's roots).
	BufferTLSCAFile string
	// BufferInsecureNoAuth lets the buffer listen beyond loopback with no credentials (test setups
	// only; a warning at start). Default false (--buffer-insecure-no-auth).
	BufferInsecureNoAuth bool
}

// Option is one setting: its flag, its environment variable, its default and how a value parses.
type Option struct {
	Flag    string // without the leading dashes
	Env     string
	Default string
	Chart   string // Helm value that renders it, "" when the chart does not expose it
	Usage   string
	set     func(c *Config, v string) error
}

// planDefaults are the planner's own defaults: the options that map onto the planner take their
// defaults from it, so the binary, the simulator and the docs cannot drift apart.
var planDefaults = plan.DefaultConfig()

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// Options lists every option a `siglake compactor` accepts, in documentation order.
func Options() []Option {
	return slices.Concat(placeOptions(), drainOptions(), compactionOptions(), cleanupOptions(), gossipOptions(),
		processOptions(), bufferOptions(), groupCommitOptions(), binLeaseOptions())
}

// placeOptions are the options of the role and of where things are: the WAL, the catalog, the
// warehouse and its S3 store, the HTTP listener.
func placeOptions() []Option {
	return []Option{
		{"role", "SIGLAKE_COMPACTOR_ROLE", "all", "compactor.role",
			"Which loops run: `all`, `drain` (never runs maintenance) or `maintenance`.",
			func(c *Config, v string) error {
				switch Role(v) {
				case RoleAll, RoleDrain, RoleMaintenance:
					c.Role = Role(v)
					return nil
				}
				return fmt.Errorf("accepted: all, drain, maintenance")
			}},
		{"wal-dir", "SIGLAKE_WAL_DIR", "/var/lib/siglake/wal", "wal.mountPath",
			"Directory of the pod's WAL segments (shared with the ingest container).",
			setString(func(c *Config) *string { return &c.WALDir })},
		{"catalog", "SIGLAKE_CATALOG", "sqlite:/var/lib/siglake/catalog.db", "catalog.uri",
			"Iceberg catalog: `sqlite:PATH` (embedded), `postgres://...` (SQL catalog) or `rest+http(s)://...` (REST catalog).",
			func(c *Config, v string) error {
				if !strings.HasPrefix(v, "sqlite:") && !strings.HasPrefix(v, "postgres://") &&
					!strings.HasPrefix(v, "postgresql://") && !strings.HasPrefix(v, "rest+http://") &&
					!strings.HasPrefix(v, "rest+https://") {
					return fmt.Errorf("accepted: sqlite:PATH, postgres://..., rest+http(s)://...")
				}
				c.Catalog = v
				return nil
			}},
		{"warehouse", "SIGLAKE_WAREHOUSE", "/var/lib/siglake/warehouse", "warehouse.uri",
			"Where table data goes: a local path, `file://PATH` or `s3://bucket/prefix`.",
			func(c *Config, v string) error {
				if v == "" || strings.Contains(v, "://") && !strings.HasPrefix(v, "file://") && !strings.HasPrefix(v, "s3://") {
					return fmt.Errorf("accepted: a local path, file://PATH, s3://bucket/prefix")
				}
				c.Warehouse = v
				return nil
			}},
		{"namespace", "SIGLAKE_NAMESPACE", "siglake", "catalog.namespace",
			"Iceberg namespace that tables are created in.",
			func(c *Config, v string) error {
				if !validName(v) {
					return fmt.Errorf("accepted: lower-case letters, digits and _ starting with a letter")
				}
				c.Namespace = v
				return nil
			}},
		{"http-addr", "SIGLAKE_HTTP_ADDR", "127.0.0.1:9464", "http.port",
			"Address of the HTTP server (/metrics, /debug/status, /healthz, /readyz, and the HTML status pages at / and /status).",
			setString(func(c *Config) *string { return &c.HTTPAddr })},
		{"s3-endpoint", "SIGLAKE_S3_ENDPOINT", "", "warehouse.s3.endpoint",
			"S3 endpoint URL for S3-compatible stores; empty uses AWS defaults. Credentials also come from the standard AWS_* environment.",
			setString(func(c *Config) *string { return &c.S3Endpoint })},
		{"s3-region", "SIGLAKE_S3_REGION", "us-east-1", "warehouse.s3.region",
			"S3 region.",
			setString(func(c *Config) *string { return &c.S3Region })},
		{"s3-access-key", "SIGLAKE_S3_ACCESS_KEY", "", "warehouse.s3.existingSecret",
			"S3 access key id (prefer AWS_ACCESS_KEY_ID from a Secret).",
			setString(func(c *Config) *string { return &c.S3AccessKey })},
		{"s3-secret-key", "SIGLAKE_S3_SECRET_KEY", "", "warehouse.s3.existingSecret",
			"S3 secret access key (prefer AWS_SECRET_ACCESS_KEY from a Secret).",
			setString(func(c *Config) *string { return &c.S3SecretKey })},
		{"s3-path-style", "SIGLAKE_S3_PATH_STYLE", "true", "warehouse.s3.pathStyle",
			"Path-style S3 addressing (most S3-compatible servers need it).",
			setBool(func(c *Config) *bool { return &c.S3PathStyle })},
	}
}

// drainOptions are the options of the drain: batching, segment limits, claims and how its outputs
// are cut.
func drainOptions() []Option {
	return []Option{
		{"commit-batch-target-mb", "SIGLAKE_COMMIT_BATCH_TARGET_MB", "32", "commitBatch.targetMb",
			"Drain batches sealed segments per table until their size reaches this many MiB; 0 commits every segment on its own.",
			func(c *Config, v string) error {
				n, err := parseNonNegInt(v)
				c.CommitBatchTargetBytes = int64(n) << 20
				return err
			}},
		{"commit-batch-max-age-secs", "SIGLAKE_COMMIT_BATCH_MAX_AGE_SECS", "10", "commitBatch.maxAgeSecs",
			"A batch commits once its oldest segment is this old, even below the target size.",
			setSeconds(func(c *Config) *time.Duration { return &c.CommitBatchMaxAge })},
		{"wal-segment-max-mb", "SIGLAKE_WAL_SEGMENT_MAX_MB", "64", "wal.segmentMaxMb",
			"A sealed segment larger than this many MiB is quarantined as oversize without being read (the ingest seals at its roll size, 8 MiB by default).",
			func(c *Config, v string) error {
				n, err := parseNonNegInt(v)
				if err != nil || n < 1 || n > 1<<20 {
					return fmt.Errorf("accepted: a whole number of MiB from 1 to 1048576")
				}
				c.WALSegmentMaxBytes = int64(n) << 20
				return nil
			}},
		{"drain-poll-interval", "SIGLAKE_DRAIN_POLL_INTERVAL", "1s", "",
			"How often the drain scans the WAL directory for sealed segments.",
			setDuration(func(c *Config) *time.Duration { return &c.DrainPollInterval }, true)},
		{"catalog-claim", "SIGLAKE_CATALOG_CLAIM", "false", "compactor.catalogClaim",
			"Catalog claims so several drain processes share one WAL root: each subdirectory of --wal-dir is a stream, drained only by the process holding its claim (docs/claims.md).",
			setBool(func(c *Config) *bool { return &c.CatalogClaim })},
		{"catalog-claim-ttl", "SIGLAKE_CATALOG_CLAIM_TTL", "30s", "",
			"A claim not renewed for this long may be taken over; renewed every third of it, and its holder stops committing after two thirds (the last third covers a commit in flight and clock skew).",
			func(c *Config, v string) error {
				d, err := duration.Parse(v)
				if err != nil || d < 300*time.Millisecond {
					return errors.New("accepted: a duration of at least 300ms, such as 30s, 2m, 1h or 1h30m (" + duration.Units + ")")
				}
				c.CatalogClaimTTL = d
				return nil
			}},
		{"target-file-mb", "SIGLAKE_TARGET_FILE_MB", "256", "",
			"Output files split (only where the timestamp changes) once they reach this many MiB.",
			setPosScaled(func(c *Config) *int64 { return &c.TargetFileBytes }, 20, "MiB")},
		{"split-sparse", "SIGLAKE_COMPACTOR_SPLIT_SPARSE", strconv.FormatFloat(density.DefaultSplitSparse, 'g', -1, 64), "compactor.splitSparse",
			"Drain and rewrite outputs are also cut where the row density falls below this fraction of the median density (late rows get files of their own, named late and planned as a stream of their own, docs/compaction.md); 0 cuts by size only, names no new file late and plans one stream.",
			func(c *Config, v string) error {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f < 0 || f >= 1 || f != f {
					return fmt.Errorf("accepted: a fraction from 0 (off) up to but not including 1, such as 0.05")
				}
				c.SplitSparse = f
				return nil
			}},
	}
}

// compactionOptions are the options of maintenance rewrites: the planner's triggers, expiry,
// indexes and the merges' memory.
func compactionOptions() []Option {
	return []Option{
		{"recluster-interval-secs", "SIGLAKE_RECLUSTER_INTERVAL_SECS", seconds(planDefaults.ReclusterInterval), "compactor.reclusterIntervalSecs",
			"Maintenance tick for file rewrites; 0 disables file rewrites but keeps the other maintenance (it does not make the process drain-only).",
			setSeconds(func(c *Config) *time.Duration { return &c.ReclusterInterval })},
		{"leveled", "SIGLAKE_COMPACTOR_LEVELED", strconv.FormatBool(planDefaults.Leveled), "compactor.leveled",
			"Leveled compaction; 0/off/false selects the legacy flat whole-partition pass.",
			setBool(func(c *Config) *bool { return &c.Leveled })},
		{"max-overlap-depth", "SIGLAKE_COMPACTOR_MAX_OVERLAP_DEPTH", strconv.Itoa(planDefaults.MaxOverlapDepth), "compactor.maxOverlapDepth",
			"Depth trigger: above this overlap depth the deepest overlapping cluster is rewritten.",
			setPosInt(func(c *Config) *int { return &c.MaxOverlapDepth })},
		{"max-sealed-for-recluster", "SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER", strconv.Itoa(planDefaults.MaxSealedForRecluster), "compactor.maxSealedForRecluster",
			"Sealed-WAL backlog (segments) above which draining gets priority over maintenance.",
			setPosInt(func(c *Config) *int { return &c.MaxSealedForRecluster })},
		{"backpressure-compact-every", "SIGLAKE_COMPACTOR_BACKPRESSURE_COMPACT_EVERY", strconv.Itoa(planDefaults.BackpressureCompactEvery), "compactor.backpressureCompactEvery",
			"Every Nth backlogged cycle runs a restricted L0 pass; 0 disables compaction while backlogged.",
			setNonNegInt(func(c *Config) *int { return &c.BackpressureCompactEvery })},
		{"level-max-gen", "SIGLAKE_COMPACTOR_LEVEL_MAX_GEN", strconv.Itoa(planDefaults.LevelMaxGen), "compactor.levelMaxGen",
			"Generation cap for level selection (overlap rewrites may still take capped files); 0 = no cap.",
			setNonNegInt(func(c *Config) *int { return &c.LevelMaxGen })},
		{"max-fan-in", "SIGLAKE_COMPACTOR_MAX_FANIN", strconv.Itoa(planDefaults.MaxFanIn), "compactor.maxFanIn",
			"Most input files one rewrite bin may take; 2 to 1024.",
			func(c *Config, v string) error {
				n, err := parseNonNegInt(v)
				if err != nil || n < 2 || n > maxMergeFanIn {
					return fmt.Errorf("accepted: a whole number from 2 to %d (a bin of one file merges nothing)", maxMergeFanIn)
				}
				c.MaxFanIn = n
				return nil
			}},
		{"snapshot-expire-interval-secs", "SIGLAKE_SNAPSHOT_EXPIRE_INTERVAL_SECS", "60", "snapshotExpire.intervalSecs",
			"How often snapshots are expired; 0 disables expiry.",
			setSeconds(func(c *Config) *time.Duration { return &c.SnapshotExpireInterval })},
		{"snapshot-retain", "SIGLAKE_SNAPSHOT_RETAIN", "100", "snapshotExpire.retain",
			"Snapshots kept by expiry (the latest N).",
			setPosInt(func(c *Config) *int { return &c.SnapshotRetain })},
		{"index-footer-max-bytes", "SIGLAKE_INDEX_FOOTER_MAX_BYTES", strconv.Itoa(index.DefaultFooterMaxBytes), "compactor.indexFooterMaxBytes",
			"Largest inverted index kept in a Parquet footer, per column, in bytes (at least 1; to write no footer index, turn off --inverted-index).",
			func(c *Config, v string) error {
				n, err := parseNonNegInt(v)
				if err != nil || n == 0 {
					return fmt.Errorf("accepted: a whole number of bytes >= 1; to keep no inverted index in footers set SIGLAKE_INVERTED_INDEX=off")
				}
				c.IndexFooterMaxBytes = int64(n)
				return nil
			}},
		{"inverted-index", "SIGLAKE_INVERTED_INDEX", "true", "compactor.invertedIndex.enabled",
			"Footer inverted indexes on in-memory rewrites.",
			setBool(func(c *Config) *bool { return &c.InvertedIndex })},
		{"index-rebuild", "SIGLAKE_INDEX_REBUILD", "false", "compactor.indexRebuild",
			"After a rewrite commits, build the inverted indexes its output files lack (streamed merges write none) as Puffin sidecars and register them; nothing already committed is backfilled.",
			setBool(func(c *Config) *bool { return &c.IndexRebuild })},
		{"merge-memory-bytes", "SIGLAKE_MERGE_MEMORY_BYTES", "0", "",
			"Decoded-memory budget for merges in bytes; 0 derives it from GOMEMLIMIT or the container memory limit.",
			setInt64(func(c *Config) *int64 { return &c.MergeMemoryBytes })},
		{"memory-budget-bytes", "SIGLAKE_MEMORY_BUDGET_BYTES", "0", "",
			"Process memory budget in bytes that drain batches, merges, index rebuilds and the WAL buffer take their shares of (a loop waits rather than exceed it); 0 is 0.6 of GOMEMLIMIT or the container memory limit, 1 GiB without either.",
			setInt64(func(c *Config) *int64 { return &c.MemoryBudgetBytes })},
		{"merge-chunk-rows", "SIGLAKE_MERGE_CHUNK_ROWS", strconv.Itoa(merge.DefaultChunkRows), "",
			"Rows the page-bounded merge decodes at a time; its decoded memory is about this many rows whatever the input size.",
			setPosScaled(func(c *Config) *int64 { return &c.MergeChunkRows }, 0, "rows")},
		{"merge-splice-min-rows", "SIGLAKE_MERGE_SPLICE_MIN_ROWS", strconv.Itoa(merge.DefaultSpliceMinRows), "",
			"Smallest row group the splice merge copies without re-encoding (smaller ones are re-encoded with the rows around them); 0 turns the splice path off.",
			func(c *Config, v string) error {
				n, err := parseNonNegInt(v)
				c.MergeSpliceMinRows = int64(n)
				if n == 0 {
					c.MergeSpliceMinRows = -1
				}
				return err
			}},
		{"merge-parquet-encoder", "SIGLAKE_MERGE_PARQUET_ENCODER", string(writer.EncoderAuto), "compactor.mergeParquetEncoder",
			"Library that encodes the rows of every Parquet data file the process writes (merges and the drain): `auto` takes the one measured faster for each writer (parquet-go for the drain, arrow-go for merges whose rows arrow-go decoded; docs/benchmarks.md, \"Each codec where it is faster\"), `arrow` is arrow-go everywhere (the encoder before `auto`; the k-way merge then decodes with arrow-go too, since its path on parquet-go values encodes with parquet-go), `parquet-go` is github.com/parquet-go/parquet-go everywhere. The files hold the same rows, schema, field ids, statistics, page indexes, footer metadata and chunk checksums either way (docs/file-format.md, \"Encoders\").",
			func(c *Config, v string) error {
				e, err := writer.ParseEncoder(v)
				if err != nil {
					return errors.New("accepted: auto, arrow, parquet-go")
				}
				c.MergeParquetEncoder = e
				return nil
			}},
		{"merge-parquet-decoder", "SIGLAKE_MERGE_PARQUET_DECODER", string(merge.DecoderParquetGo), "compactor.mergeParquetDecoder",
			"Library the k-way merge decodes its inputs with: `parquet-go` (the default) or `arrow` (arrow-go, the decoder before it); parquet-go decodes, merges and encodes on parquet-go's values without Arrow where the bin allows (inputs of the output's Parquet schema, no row filter or fold; other bins stay on arrow-go). The files hold the same rows in the same order with the same metadata either way (docs/file-format.md, \"Decoders\"; measured in docs/benchmarks.md, \"The decoder: k-way on parquet-go's values\").",
			func(c *Config, v string) error {
				d, err := merge.ParseDecoder(v)
				if err != nil {
					return errors.New("accepted: arrow, parquet-go")
				}
				c.MergeParquetDecoder = d
				return nil
			}},
		{"merge-splice-verify", "SIGLAKE_MERGE_SPLICE_VERIFY", "true", "",
			"Read the pages of every row group the splice merge copies from an input without chunk checksums (another writer's file; headers parsed, data decompressed, value counts checked), so damaged input fails the rewrite instead of being copied on; off saves about half the splice's CPU on such inputs. Checksums (`siglake.chunkcrc.v1`, in siglake's files) are checked either way.",
			setBool(func(c *Config) *bool { return &c.MergeSpliceVerify })},
	}
}

// cleanupOptions are the options of delete tasks, files set aside after failures, retention and
// folding.
func cleanupOptions() []Option {
	return []Option{
		{"delete-tasks", "SIGLAKE_DELETE_TASKS", "true", "compactor.deleteTasks",
			"Idle-cycle delete-task sweep over owned tables; 0/off/false/no disables it. Requests are still recorded, and `siglake delete-sweep --apply` still executes them.",
			setBool(func(c *Config) *bool { return &c.DeleteTasks })},
		{"delete-cancel-period", "SIGLAKE_DELETE_CANCEL_PERIOD", "24h", "compactor.deleteCancelPeriod",
			"How long a recorded deletion request waits before any sweep executes it (the idle sweep and `siglake delete-sweep --apply`, which skips it only with `--skip-cancel-period`); `siglake delete-cancel ID` withdraws it until a minute before. `delete-request` stores its creation plus this period in the request (`execute_at`), and a sweep waits until the later of that and the creation plus its own period. Seconds to weeks (90s, 30m, 24h, 2d, 1w); 0 records requests that execute at once.",
			func(c *Config, v string) error {
				d, err := duration.Parse(v)
				c.DeleteCancelPeriod = d
				return err
			}},
		{"delete-sweep-max-files", "SIGLAKE_DELETE_SWEEP_MAX_FILES", "8", "",
			"Most candidate files one delete sweep of a table examines (and rewrites), so a big request cannot starve the drain; the rest wait for the next idle cycle.",
			setPosInt(func(c *Config) *int { return &c.DeleteSweepMaxFiles })},
		{"delete-sweep-max-mb", "SIGLAKE_DELETE_SWEEP_MAX_MB", "1024", "",
			"Most MiB of candidate files one delete sweep of a table examines (at least one file is always examined).",
			setPosScaled(func(c *Config) *int64 { return &c.DeleteSweepMaxBytes }, 20, "MiB")},
		{"compactor-skip-after-failures", "SIGLAKE_COMPACTOR_SKIP_AFTER_FAILURES", "3", "",
			"Permanent rewrite failures blamed on one input file (corrupt, truncated, missing, unreadable) before it is set aside: recorded in the table's properties and left out of planning until `siglake skipped clear` (docs/operations.md).",
			setPosInt(func(c *Config) *int { return &c.SkipAfterFailures })},
		{"compactor-failure-backoff-secs", "SIGLAKE_COMPACTOR_FAILURE_BACKOFF_SECS", "30", "",
			"Seconds before a bin whose rewrite failed is tried again: a transient cause doubles it per failure up to 30 minutes, a permanent one waits this long each time.",
			func(c *Config, v string) error {
				n, err := parseNonNegInt(v)
				if err == nil && n == 0 {
					err = fmt.Errorf("accepted: a whole number of seconds >= 1")
				}
				c.FailureBackoff = time.Duration(n) * time.Second
				return err
			}},
		{"retention-period", "SIGLAKE_RETENTION_PERIOD", "0", "compactor.retention.period",
			"Retention period of tables without their own policy (`siglake retention set`): rows older than this leave the table. Days (30d), weeks (4w) or hours (36h), at least 1d; 0 keeps rows for ever.",
			func(c *Config, v string) error {
				d, err := retention.ParsePeriod("the period", v)
				c.RetentionPeriod = d
				return err
			}},
		{"retention-interval-secs", "SIGLAKE_RETENTION_INTERVAL_SECS", "3600", "compactor.retention.intervalSecs",
			"How often each owned table gets a retention run; 0 disables retention (policies stay stored and shown).",
			setSeconds(func(c *Config) *time.Duration { return &c.RetentionInterval })},
		{"retention-delete-delay", "SIGLAKE_RETENTION_DELETE_DELAY", "2h", "compactor.retention.deleteDelay",
			"How long objects that retention removed from a table stay in storage (for readers on an older snapshot) before retention deletes them; they also wait until no retained snapshot references them.",
			setDuration(func(c *Config) *time.Duration { return &c.RetentionDeleteDelay }, false)},
		{"retention-max-files", "SIGLAKE_RETENTION_MAX_FILES", "8", "",
			"Most files one retention run of a table rewrites (files straddling a cutoff); the rest wait for the next run. Whole-file drops are not capped.",
			setPosInt(func(c *Config) *int { return &c.RetentionMaxFiles })},
		{"retention-max-mb", "SIGLAKE_RETENTION_MAX_MB", "1024", "",
			"Most MiB of files one retention run of a table rewrites (at least one file is always rewritten).",
			setPosScaled(func(c *Config) *int64 { return &c.RetentionMaxBytes }, 20, "MiB")},
		{"fold-max-groups", "SIGLAKE_FOLD_MAX_GROUPS", "262144", "",
			"Most groups (key values of one time bucket) a fold of a rollup table holds before it writes them out as partial rows, which a later fold folds again (docs/folding.md).",
			setPosInt(func(c *Config) *int { return &c.FoldMaxGroups })},
		{"fold-min-files", "SIGLAKE_FOLD_MIN_FILES", "8", "",
			"Unfolded files (drain output, late rows) of one partition of a rollup table at which maintenance folds them; coarsening to a tier does not wait for it.",
			setPosInt(func(c *Config) *int { return &c.FoldMinFiles })},
	}
}

// gossipOptions are the options of gossip membership and failure detection.
func gossipOptions() []Option {
	return []Option{
		{"node-name", "SIGLAKE_NODE_NAME", "", "",
			"Gossip member name; empty uses the hostname (the pod name on Kubernetes).",
			setString(func(c *Config) *string { return &c.NodeName })},
		{"gossip-bind", "SIGLAKE_GOSSIP_BIND", "", "gossip.port",
			"Gossip bind host:port (port 7946 by convention); empty runs without gossip and owns every table (with catalog claims and group commit: the tables whose committer claim it holds, docs/group-commit.md).",
			setString(func(c *Config) *string { return &c.GossipBind })},
		{"gossip-advertise", "SIGLAKE_GOSSIP_ADVERTISE", "", "",
			"Address peers use to reach this member; empty uses the bind address (set it to the pod IP).",
			setString(func(c *Config) *string { return &c.GossipAdvertise })},
		{"gossip-join", "SIGLAKE_GOSSIP_JOIN", "", "gossip.join",
			"Comma-separated host:port peers or DNS names (a headless Service) to join.",
			func(c *Config, v string) error {
				c.GossipJoin = joinlist.Parse(v)
				return nil
			}},
		{"gossip-key-file", "SIGLAKE_GOSSIP_KEY_FILE", "", "gossip.keySecret.name",
			"File of gossip encryption keys (mount it from a Secret): base64 keys of 16, 24 or 32 bytes, one per line; the first is sent with, all are accepted. Re-read every 5s, so a rotation (add the new key second, make it first, remove the old one) needs no restart (docs/gossip.md). Empty: plaintext gossip that any process reaching the port can join, with a warning at start.",
			setString(func(c *Config) *string { return &c.GossipKeyFile })},
		{"gossip-cluster-label", "SIGLAKE_GOSSIP_CLUSTER_LABEL", "", "gossip.clusterLabel",
			"Label on every gossip packet; members refuse packets with another label (or none), so two clusters that reach each other never merge. At most 255 bytes. Setting or changing it on a running cluster splits it until every member has it: set it on a new cluster (docs/operations.md).",
			setString(func(c *Config) *string { return &c.GossipClusterLabel })},
		{"gossip-key-migration", "SIGLAKE_GOSSIP_KEY_MIGRATION", "", "gossip.keyMigration",
			"Bring a key to a cluster that gossips without one, one rolling restart per step, with --gossip-key-file set: accept (send plaintext, accept plaintext and encrypted), then send (send encrypted, accept both), then empty (plaintext refused). Accepted: accept, send or empty (docs/operations.md).",
			func(c *Config, v string) error {
				switch v {
				case "", gossip.KeyMigrationAccept, gossip.KeyMigrationSend:
					c.GossipKeyMigration = v
					return nil
				}
				return fmt.Errorf("accepted: %s, %s or empty", gossip.KeyMigrationAccept, gossip.KeyMigrationSend)
			}},
		{"gossip-settle-secs", "SIGLAKE_GOSSIP_SETTLE_SECS", "5", "",
			"A member acts as a table's owner only after its membership view was stable this long.",
			setSeconds(func(c *Config) *time.Duration { return &c.GossipSettle })},
		{"gossip-rejoin-secs", "SIGLAKE_GOSSIP_REJOIN_SECS", "30", "",
			"How often a member re-resolves and re-joins the join list, so one that started alone finds the others.",
			setSeconds(func(c *Config) *time.Duration { return &c.GossipRejoin })},
		{"gossip-probe-interval", "SIGLAKE_GOSSIP_PROBE_INTERVAL", "1s", "",
			"How often a member probes one random peer (memberlist). Failure detection takes about probe interval x (suspicion mult x max(1, log10(members)) + 1); docs/gossip.md has measurements.",
			setDuration(func(c *Config) *time.Duration { return &c.GossipProbeInterval }, true)},
		{"gossip-probe-timeout", "SIGLAKE_GOSSIP_PROBE_TIMEOUT", "500ms", "",
			"How long a direct probe waits for its ack before peers are asked to probe indirectly.",
			setDuration(func(c *Config) *time.Duration { return &c.GossipProbeTimeout }, true)},
		{"gossip-suspicion-mult", "SIGLAKE_GOSSIP_SUSPICION_MULT", "4", "",
			"Scales how long a suspected member may refute the suspicion before it is declared dead.",
			setPosInt(func(c *Config) *int { return &c.GossipSuspicionMult })},
	}
}

// processOptions are the options of logging and the deadlines of shutdown and of each catalog
// commit.
func processOptions() []Option {
	return []Option{
		{"log-format", "SIGLAKE_LOG_FORMAT", "auto", "",
			"Log encoding: `json`, `console`, or `auto` (console on a terminal, JSON otherwise).",
			func(c *Config, v string) error {
				switch v {
				case "json", "console", "auto":
					c.LogFormat = v
					return nil
				}
				return fmt.Errorf("accepted: json, console, auto")
			}},
		{"log-level", "SIGLAKE_LOG_LEVEL", "info", "",
			"Log level: debug, info, warn, error.",
			func(c *Config, v string) error {
				switch v {
				case "debug", "info", "warn", "error":
					c.LogLevel = v
					return nil
				}
				return fmt.Errorf("accepted: debug, info, warn, error")
			}},
		{"shutdown-timeout", "SIGLAKE_SHUTDOWN_TIMEOUT", "30s", "",
			"On SIGTERM, how long the in-flight commit may take before it is abandoned (uncommitted segments stay in the WAL).",
			setDuration(func(c *Config) *time.Duration { return &c.ShutdownTimeout }, true)},
		{"commit-timeout", "SIGLAKE_COMMIT_TIMEOUT", "2m", "compactor.commitTimeout",
			"Deadline of each catalog commit attempt (drain appends, rewrites, property updates), at least 5s: past it the attempt is abandoned as of unknown outcome (its files kept, the stream mark re-read) and retried; slow commits are logged at half of it. gc's floor must stay at least 12 times it (docs/gc.md).",
			setDuration(func(c *Config) *time.Duration { return &c.CommitTimeout }, true)},
	}
}

// bufferOptions are the options of the WAL buffer read API and its credentials.
func bufferOptions() []Option {
	return []Option{
		{"buffer-addr", "SIGLAKE_BUFFER_ADDR", "", "compactor.walBuffer.enabled",
			"Listen address (host:port; a bare port listens on loopback) of the WAL buffer read API, its own listener: sealed rows not yet committed, as Arrow IPC (docs/wal-buffer.md). Empty turns it off.",
			func(c *Config, v string) error {
				addr, err := bufferAddr(v)
				c.BufferAddr = addr
				return err
			}},
		{"buffer-retain-after-drain", "SIGLAKE_BUFFER_RETAIN_AFTER_DRAIN", "30s", "",
			"With the WAL buffer on, committed segments are kept this long, so a reader whose snapshot is a few commits old gets its rows instead of a 409; 0 removes them at once.",
			setDuration(func(c *Config) *time.Duration { return &c.BufferRetainAfterDrain }, false)},
		{"buffer-max-readers", "SIGLAKE_BUFFER_MAX_READERS", "4", "",
			"WAL buffer reads served at once; one more gets 429.",
			setPosInt(func(c *Config) *int { return &c.BufferMaxReaders })},
		{"buffer-memory-bytes", "SIGLAKE_BUFFER_MEMORY_BYTES", "0", "",
			"Memory the WAL buffer's reads share (each holds at most its share of segment file and decoded rows; a segment beyond it gets 413); 0 is a quarter of the merge budget.",
			setInt64(func(c *Config) *int64 { return &c.BufferMemoryBytes })},
		{"buffer-max-response-mb", "SIGLAKE_BUFFER_MAX_RESPONSE_MB", "256", "",
			"A WAL buffer answer ends at a segment boundary after this many MiB of segments (or 256 segments) and says where the next page starts.",
			setPosScaled(func(c *Config) *int64 { return &c.BufferMaxResponseBytes }, 20, "MiB")},
		{"buffer-token-file", "SIGLAKE_BUFFER_TOKEN_FILE", "", "compactor.walBuffer.tokenSecret.name",
			"File of bearer tokens the WAL buffer accepts (mount it from a Secret), one per line, each at least 16 printable characters; every line is accepted and the file is re-read when it changes, so a rotation (add the new token, move readers to it, remove the old) needs no restart. Readers (siglake tail) send its first line. Without TLS the token crosses the network in clear (docs/wal-buffer.md). Empty: no token, which only a loopback --buffer-addr (or a client CA) allows.",
			setString(func(c *Config) *string { return &c.BufferTokenFile })},
		{"buffer-tls-cert-file", "SIGLAKE_BUFFER_TLS_CERT_FILE", "", "compactor.walBuffer.tls.secretName",
			"PEM certificate (chain) of the WAL buffer's listener, with --buffer-tls-key-file: the buffer serves HTTPS, which is what keeps a bearer token private. Re-read when it changes. Readers present it as their client certificate. Empty: plain HTTP.",
			setString(func(c *Config) *string { return &c.BufferTLSCertFile })},
		{"buffer-tls-key-file", "SIGLAKE_BUFFER_TLS_KEY_FILE", "", "compactor.walBuffer.tls.secretName",
			"PEM private key of --buffer-tls-cert-file.",
			setString(func(c *Config) *string { return &c.BufferTLSKeyFile })},
		{"buffer-tls-client-ca-file", "SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE", "", "compactor.walBuffer.tls.clientCA",
			"PEM CA certificates for mutual TLS (needs --buffer-tls-cert-file): a request without a client certificate they signed gets 401. With a token file, both are required. Re-read when it changes.",
			setString(func(c *Config) *string { return &c.BufferTLSClientCAFile })},
		{"buffer-tls-ca-file", "SIGLAKE_BUFFER_TLS_CA_FILE", "", "compactor.walBuffer.tls.secretName",
			"For readers (siglake tail): PEM CA certificates that signed the WAL buffer's certificate, for https:// buffer addresses. Empty: the system's roots. The chart sets the TLS Secret's ca.crt, for siglake tail in the pod.",
			setString(func(c *Config) *string { return &c.BufferTLSCAFile })},
		{"buffer-insecure-no-auth", "SIGLAKE_BUFFER_INSECURE_NO_AUTH", "false", "compactor.walBuffer.insecureNoAuth",
			"Let a --buffer-addr beyond loopback serve without a token file or client CA: anyone who reaches the port reads the log rows. For test setups only; a warning at start.",
			setBool(func(c *Config) *bool { return &c.BufferInsecureNoAuth })},
	}
}

// ConfigError names the option, both its spellings, the bad value and what is accepted.
type ConfigError struct {
	Opt   Option
	Value string
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("invalid value %q for --%s / %s: %v", e.Value, e.Opt.Flag, e.Opt.Env, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// FlagError is a command line Load's flag parser refused (an unknown flag, a flag without its
// value, a stray argument); Load has printed it to stderr with the usage. A bad value of a known
// option is a *ConfigError instead.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// Load builds a Config from defaults, then the environment, then command-line flags (flags win).
// getenv is os.Getenv in production; tests pass their own.
func Load(args []string, getenv func(string) string) (Config, error) {
	var c Config
	opts := Options()
	for _, o := range opts {
		if err := o.set(&c, o.Default); err != nil && o.Default != "" {
			panic(fmt.Sprintf("default of %s does not parse: %v", o.Flag, err)) // a bug, caught by tests
		}
	}
	for _, o := range opts {
		if v, ok := lookup(getenv, o.Env); ok {
			if err := o.set(&c, v); err != nil {
				return c, &ConfigError{o, v, err}
			}
		}
	}
	var cfgErr error
	fs := flagSet(&c, &cfgErr)
	// -h prints the options to stdout (help asked for); a bad flag prints the error and the options
	// to stderr.
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Stdout.Write(out.Bytes())
	case cfgErr != nil:
		// A value an option rejects: the returned error names the option and what it accepts, and
		// the caller prints it once; the whole usage would bury that line in a container's log.
	default:
		os.Stderr.Write(out.Bytes())
	}
	if err != nil {
		if cfgErr != nil {
			return c, cfgErr
		}
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, &FlagError{err}
	}
	if err := checkCommitTimeout(c.CommitTimeout, getenv); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected arguments %q: siglake compactor takes only flags", fs.Args())
		fmt.Fprintf(os.Stderr, "%v\nRun 'siglake compactor -h' for the options.\n", err)
		return c, &FlagError{err}
	}
	if c.NodeName == "" {
		c.NodeName, _ = os.Hostname()
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// Validate checks the settings together as the planner, the merges and gossip will use them, so
// a configuration that parses option by option but cannot work fails at start with the options'
// names (promise 8) instead of in every maintenance cycle. Load calls it.
func (c Config) Validate() error {
	var errs []error
	if _, err := PlanConfig(c); err != nil {
		errs = append(errs, fmt.Errorf("%w (options --recluster-interval-secs, --max-overlap-depth, --level-max-gen, --max-fan-in / SIGLAKE_COMPACTOR_MAX_FANIN, --max-sealed-for-recluster, --backpressure-compact-every)", err))
	}
	if c.MaxFanIn > maxMergeFanIn {
		errs = append(errs, fmt.Errorf("invalid value %d for --max-fan-in / SIGLAKE_COMPACTOR_MAX_FANIN: accepted: 2 to %d (each k-way input holds a row group and a file handle)", c.MaxFanIn, maxMergeFanIn))
	}
	if c.BufferAddr != "" && c.CatalogClaim {
		// Under claims every pod sees every stream of the shared WAL root, so a reader asking all
		// pods would get each waiting row once per pod (promise 12): not supported yet.
		errs = append(errs, fmt.Errorf("--buffer-addr / SIGLAKE_BUFFER_ADDR with --catalog-claim / SIGLAKE_CATALOG_CLAIM: the WAL buffer does not serve a shared WAL root yet (each pod would serve every stream); turn one of them off"))
	}
	if c.BufferAddr != "" && c.BufferAddr == c.HTTPAddr && !strings.HasSuffix(c.BufferAddr, ":0") {
		errs = append(errs, fmt.Errorf("--buffer-addr / SIGLAKE_BUFFER_ADDR %q is also --http-addr / SIGLAKE_HTTP_ADDR: the WAL buffer has a listener of its own", c.BufferAddr))
	}
	if err := bufferAuthCheck(c); err != nil {
		errs = append(errs, err)
	}
	if err := groupCommitCheck(c); err != nil {
		errs = append(errs, err)
	}
	if c.GossipBind != "" {
		if _, _, err := GossipConfig(c, c.HTTPAddr, ""); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// bufferAuthCheck refuses a WAL buffer reachable beyond the pod without credentials: it serves
// log rows (promise 14). Loopback needs none, since only the pod's own containers reach it.
func bufferAuthCheck(c Config) error {
	var errs []error
	if (c.BufferTLSCertFile == "") != (c.BufferTLSKeyFile == "") {
		errs = append(errs, fmt.Errorf("--buffer-tls-cert-file / SIGLAKE_BUFFER_TLS_CERT_FILE and --buffer-tls-key-file / SIGLAKE_BUFFER_TLS_KEY_FILE go together: set both (HTTPS) or neither"))
	}
	if c.BufferTLSClientCAFile != "" && c.BufferTLSCertFile == "" {
		errs = append(errs, fmt.Errorf("--buffer-tls-client-ca-file / SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE needs TLS: set --buffer-tls-cert-file and --buffer-tls-key-file too"))
	}
	if err := BufferCredentialsCheck(c.BufferAddr, c.BufferTokenFile, c.BufferTLSClientCAFile, c.BufferInsecureNoAuth); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// BufferCredentialsCheck is the rule of bufferAuthCheck for one buffer listener: beyond loopback,
// a token file or a client CA, unless insecureNoAuth. The buffer applies it again at its start,
// so that a Config built in code, which Validate never saw, cannot serve rows without them.
func BufferCredentialsCheck(addr, tokenFile, clientCAFile string, insecureNoAuth bool) error {
	if addr == "" || BufferLoopback(addr) || tokenFile != "" || clientCAFile != "" || insecureNoAuth {
		return nil
	}
	return fmt.Errorf("--buffer-addr / SIGLAKE_BUFFER_ADDR %q listens beyond loopback without credentials, so anyone who reaches it reads the log rows: accepted: a loopback address (a bare port, 127.0.0.1:PORT, [::1]:PORT), "+
		"or --buffer-token-file / SIGLAKE_BUFFER_TOKEN_FILE (bearer tokens, best with --buffer-tls-cert-file), or --buffer-tls-client-ca-file / SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE (mutual TLS); "+
		"--buffer-insecure-no-auth / SIGLAKE_BUFFER_INSECURE_NO_AUTH serves without them (test setups only)", addr)
}

// BufferLoopback says whether a --buffer-addr listens on loopback only. An empty host (":9465")
// is every interface; a name is loopback only as "localhost".
func BufferLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bufferAddr accepts host:port, or a bare port for loopback (the buffer serves log rows, so
// listening beyond the pod is asked for, never the default).
func bufferAddr(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < 65536 {
		return "127.0.0.1:" + v, nil
	}
	if _, port, err := net.SplitHostPort(v); err == nil {
		if n, err := strconv.Atoi(port); err == nil && n >= 0 && n < 65536 {
			return v, nil
		}
	}
	return "", fmt.Errorf("accepted: host:port (0.0.0.0:9465 for every interface), a bare port for loopback, or empty for off")
}

// maxMergeFanIn bounds --max-fan-in: a k-way merge keeps one decoded row group and one open file
// per input, so thousands of inputs exhaust memory or descriptors before they save a pass.
const maxMergeFanIn = 1024

// flagSet defines every option as a flag that sets c; a value an option rejects is kept in cfgErr
// (the flag package's own error loses its type).
func flagSet(c *Config, cfgErr *error) *flag.FlagSet {
	fs := flag.NewFlagSet("siglake compactor", flag.ContinueOnError)
	for _, o := range Options() {
		o := o
		fs.Func(o.Flag, flagUsage(o), func(v string) error {
			if err := o.set(c, v); err != nil {
				*cfgErr = &ConfigError{o, v, err}
				return *cfgErr
			}
			return nil
		})
	}
	return fs
}

// flagUsage is an option's usage line for -h. The flag package takes a back-quoted word of a usage
// as the flag's value placeholder (`-role all`), so the back quotes Option.Usage carries for the
// Markdown of docs/configuration.md become single quotes here.
func flagUsage(o Option) string {
	return strings.ReplaceAll(o.Usage, "`", "'") + " (env " + o.Env + ", default " + quoteDefault(o.Default) + ")"
}

// PrintFlags writes the option flags the way -h lists them, for a command that adds flags of its
// own to the compactor's (`siglake compactor --once`).
func PrintFlags(w io.Writer) {
	var cfgErr error
	fs := flagSet(&Config{}, &cfgErr)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// EnvNames returns every environment variable the compactor reads, sorted (the chart test uses it).
func EnvNames() []string {
	var out []string
	for _, o := range Options() {
		out = append(out, o.Env)
	}
	sort.Strings(out)
	return out
}

func lookup(getenv func(string) string, key string) (string, bool) {
	if getenv == nil {
		v, ok := os.LookupEnv(key)
		return v, ok
	}
	v := getenv(key)
	return v, v != ""
}

func quoteDefault(d string) string {
	if d == "" {
		return `""`
	}
	return d
}

// ParseBool accepts the spellings DESIGN.md promises: 1/0, true/false, on/off, yes/no.
func ParseBool(v string) (bool, error) { return lake.ParseBool(v) }

func validName(v string) bool {
	if v == "" || len(v) > 128 || v[0] < 'a' || v[0] > 'z' {
		return false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

func parseNonNegInt(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("accepted: a whole number >= 0")
	}
	return n, nil
}

func setString(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *field(c) = v; return nil }
}

func setBool(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := ParseBool(v)
		*field(c) = b
		return err
	}
}

func setNonNegInt(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseNonNegInt(v)
		*field(c) = n
		return err
	}
}

func setPosInt(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseNonNegInt(v)
		if err == nil && n == 0 {
			return fmt.Errorf("accepted: a whole number >= 1")
		}
		*field(c) = n
		return err
	}
}

// setInt64 reads a whole number >= 0 (bytes).
func setInt64(field func(*Config) *int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseNonNegInt(v)
		*field(c) = int64(n)
		return err
	}
}

// setPosScaled reads a whole number of unit above 0 and stores it shifted left by shift (20: MiB
// to bytes).
func setPosScaled(field func(*Config) *int64, shift uint, unit string) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseNonNegInt(v)
		if err == nil && n == 0 {
			err = fmt.Errorf("accepted: a whole number of %s above 0", unit)
		}
		*field(c) = int64(n) << shift
		return err
	}
}

func setSeconds(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseNonNegInt(v)
		*field(c) = time.Duration(n) * time.Second
		return err
	}
}

func setDuration(field func(*Config) *time.Duration, positive bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		// The one duration syntax of every option (package duration): 500ms, 10s, 2m, 1d, 1d12h.
		d, err := duration.Parse(v)
		if err != nil || positive && d == 0 {
			return errors.New("accepted: a positive duration such as 500ms, 10s, 2m, 1d or 1d12h (" + duration.Units + ")")
		}
		*field(c) = d
		return nil
	}
}

// minCommitTimeout is the least --commit-timeout accepted: a healthy commit of a large batch can
// take seconds, and a deadline below that abandons every commit (each left of unknown outcome).
const minCommitTimeout = 5 * time.Second

// testMinCommitTimeoutEnv lowers minCommitTimeout for the end-to-end tests, whose gc runs on
// objects seconds old (its floor is 12 x the commit timeout). A test hook, not an option.
const testMinCommitTimeoutEnv = "SIGLAKE_TESTONLY_MIN_COMMIT_TIMEOUT"

func checkCommitTimeout(d time.Duration, getenv func(string) string) error {
	least := minCommitTimeout
	if v, ok := lookup(getenv, testMinCommitTimeoutEnv); ok {
		if v, err := duration.Parse(v); err == nil && v > 0 {
			least = v
		}
	}
	if d >= least {
		return nil
	}
	for _, o := range Options() {
		if o.Env == "SIGLAKE_COMMIT_TIMEOUT" {
			return &ConfigError{o, d.String(), fmt.Errorf("accepted: at least %s (a shorter deadline abandons healthy commits)", least)}
		}
	}
	return nil
}

// LakeConfig is the part of Config the lake needs.
func LakeConfig(c Config) lake.Config {
	return lake.Config{Catalog: c.Catalog, Warehouse: c.Warehouse, Namespace: c.Namespace,
		S3Endpoint: c.S3Endpoint, S3Region: c.S3Region, S3AccessKey: c.S3AccessKey, S3SecretKey: c.S3SecretKey, S3PathStyle: c.S3PathStyle,
		CommitTimeout: c.CommitTimeout, ManifestMergeMinCount: c.ManifestMergeMinCount}
}

// MetadataOptions is the search metadata a write to t produces, from the process options and the
// table's settings (lake.WriteMetadata).
func (c Config) MetadataOptions(t *table.Table) merge.MetadataOptions {
	return lake.WriteMetadata(t, !c.InvertedIndex, c.IndexFooterMaxBytes)
}

// PlanConfig maps the process options onto the planner's configuration.
func PlanConfig(c Config) (plan.Config, error) {
	p := plan.DefaultConfig()
	p.Leveled = c.Leveled
	p.ReclusterInterval = c.ReclusterInterval
	p.MaxOverlapDepth = c.MaxOverlapDepth
	p.LevelMaxGen = c.LevelMaxGen
	p.MaxFanIn = c.MaxFanIn
	p.MaxFilesPerPass = max(p.MaxFilesPerPass, c.MaxFanIn)
	p.MaxSealedForRecluster = c.MaxSealedForRecluster
	p.BackpressureCompactEvery = c.BackpressureCompactEvery
	p.LateStream = c.SplitSparse > 0
	// Without the splice an absorb bin re-encodes a terminal file whole; the same when its minimum
	// is above the row groups the writer makes, as no row group qualifies for a copy.
	if c.MergeSpliceMinRows < 0 || c.MergeSpliceMinRows > writer.DefaultRowGroupRows {
		p.AbsorbMaxReencode = 0
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("compaction settings: %w", err)
	}
	return p, nil
}

// GossipKeys reads --gossip-key-file: nil without one. The error names the option and what the
// file may hold. It is read at start (not in Validate), where the mounted Secret exists.
func GossipKeys(c Config) ([][]byte, error) {
	if c.GossipKeyFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(c.GossipKeyFile)
	if err == nil {
		var keys [][]byte
		if keys, err = gossipkeys.Parse(data); err == nil {
			return keys, nil
		}
	}
	return nil, fmt.Errorf("--gossip-key-file / SIGLAKE_GOSSIP_KEY_FILE %q: %w; accepted: %s", c.GossipKeyFile, err, gossipkeys.Accepted)
}

// GossipConfig maps the process options onto the gossip configuration. ok is false when
// --gossip-bind is empty: the process runs alone and owns every table.
func GossipConfig(c Config, httpAddr, version string) (gc gossip.Config, ok bool, err error) {
	if c.GossipBind == "" {
		return gc, false, nil
	}
	gc = gossip.DefaultConfig()
	if c.NodeName != "" {
		gc.NodeName = c.NodeName
	}
	host, port, err := joinlist.ParseHostPort(c.GossipBind, gossip.DefaultPort)
	if err != nil {
		return gc, false, fmt.Errorf("--gossip-bind / SIGLAKE_GOSSIP_BIND %q: %w; accepted: host:port", c.GossipBind, err)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	gc.BindAddr, gc.BindPort = host, port
	if c.GossipAdvertise != "" {
		h, p, err := joinlist.ParseHostPort(c.GossipAdvertise, port)
		if err != nil || h == "" {
			return gc, false, fmt.Errorf("--gossip-advertise / SIGLAKE_GOSSIP_ADVERTISE %q: accepted: ip or ip:port", c.GossipAdvertise)
		}
		gc.AdvertiseAddr, gc.AdvertisePort = h, p
	}
	gc.Join = c.GossipJoin
	if gc.Roles, err = gossip.RolesFor(string(c.Role)); err != nil {
		return gc, false, err
	}
	gc.Version, gc.HTTPAddr = version, httpAddr
	gc.Label = c.GossipClusterLabel
	gc.KeyMigration = c.GossipKeyMigration
	if c.GossipKeyMigration != "" && c.GossipKeyFile == "" {
		return gc, false, fmt.Errorf("--gossip-key-migration / SIGLAKE_GOSSIP_KEY_MIGRATION %q needs a key: set --gossip-key-file / SIGLAKE_GOSSIP_KEY_FILE", c.GossipKeyMigration)
	}
	gc.SettlePeriod = c.GossipSettle
	gc.RejoinInterval = c.GossipRejoin
	gc.ProbeInterval = c.GossipProbeInterval
	gc.ProbeTimeout = c.GossipProbeTimeout
	gc.SuspicionMult = c.GossipSuspicionMult
	if err := gc.Validate(); err != nil {
		return gc, false, fmt.Errorf("gossip settings: %w", err)
	}
	return gc, true, nil
}
