package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/plan"
)

const (
	configDoc = "../../docs/configuration.md"
	beginMark = "<!-- options:begin (generated from config.Options; SIGLAKE_UPDATE_DOCS=1 go test ./sidecar/config -run TestConfigurationDocInStep rewrites it) -->\n"
	endMark   = "<!-- options:end -->"
)

// TestConfigurationDocInStep keeps docs/configuration.md's option table identical to Options().
func TestConfigurationDocInStep(t *testing.T) {
	raw, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, beginMark), strings.Index(doc, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated-table markers", configDoc)
	}
	want := OptionsTable()
	if got := doc[i+len(beginMark) : j]; got != want {
		if os.Getenv("SIGLAKE_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(configDoc, []byte(doc[:i+len(beginMark)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("%s option table is out of step with config.Options(); rerun with SIGLAKE_UPDATE_DOCS=1.\nwant:\n%s", configDoc, want)
	}
}

func TestOptionsParse(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range Options() {
		if seen[o.Flag] || seen[o.Env] {
			t.Fatalf("duplicate option %s/%s", o.Flag, o.Env)
		}
		seen[o.Flag], seen[o.Env] = true, true
		if !strings.HasPrefix(o.Env, "SIGLAKE_") {
			t.Errorf("%s: env %s lacks the SIGLAKE_ prefix", o.Flag, o.Env)
		}
	}
	env := map[string]string{"SIGLAKE_COMPACTOR_LEVELED": "off", "SIGLAKE_COMPACTOR_ROLE": "drain", "SIGLAKE_COMMIT_BATCH_TARGET_MB": "0"}
	c, err := Load([]string{"--role", "maintenance"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Leveled || c.Role != RoleMaintenance || c.CommitBatchTargetBytes != 0 {
		t.Fatalf("env and flags not applied (flags win): %+v", c)
	}
	for _, v := range []string{"1", "true", "on", "yes", "0", "false", "off", "no", "ON", "No"} {
		if _, err := ParseBool(v); err != nil {
			t.Errorf("ParseBool(%q): %v", v, err)
		}
	}
	// Bad values fail with both names of the option and what is accepted.
	for env, val := range map[string]string{
		"SIGLAKE_COMPACTOR_ROLE": "leader", "SIGLAKE_COMPACTOR_LEVELED": "maybe",
		"SIGLAKE_COMPACTOR_MAX_OVERLAP_DEPTH": "-3", "SIGLAKE_CATALOG": "mysql://x", "SIGLAKE_WAREHOUSE": "gs://b",
		"SIGLAKE_SHUTDOWN_TIMEOUT": "soon",
	} {
		_, err := Load(nil, func(k string) string {
			if k == env {
				return val
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), env) || !strings.Contains(err.Error(), "--") || !strings.Contains(err.Error(), "accepted") {
			t.Errorf("%s=%s: error %v should name the env var, the flag and what is accepted", env, val, err)
		}
	}
}

// TestDefaultsHaveOneSource: the option table's defaults are the planner's and the merges' own,
// so the binary, the simulator and the chart cannot drift apart.
func TestDefaultsHaveOneSource(t *testing.T) {
	c, err := Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	pc, err := PlanConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := plan.DefaultConfig(); !reflect.DeepEqual(pc, want) {
		t.Fatalf("PlanConfig(defaults) = %+v\nplan.DefaultConfig() = %+v", pc, want)
	}
	if c.MaxFanIn != merge.DefaultMaxFanIn || c.MergeChunkRows != merge.DefaultChunkRows || c.IndexFooterMaxBytes != index.DefaultFooterMaxBytes {
		t.Fatalf("merge defaults: fan-in %d (merge %d), chunk rows %d (merge %d), footer max %d (index %d)", c.MaxFanIn,
			merge.DefaultMaxFanIn, c.MergeChunkRows, merge.DefaultChunkRows, c.IndexFooterMaxBytes, index.DefaultFooterMaxBytes)
	}
}

// TestSpliceOffPlansNoAbsorb: absorb bins are cheap only because the splice copies the terminal
// file; with the splice off (SIGLAKE_MERGE_SPLICE_MIN_ROWS=0) the planner must not plan them.
// A minimum above the writer's row-group rows copies nothing either.
func TestSpliceOffPlansNoAbsorb(t *testing.T) {
	for minRows, want := range map[string]float64{
		"0":       0,
		"1000000": 0,
		strconv.Itoa(writer.DefaultRowGroupRows + 1): 0,
		strconv.Itoa(writer.DefaultRowGroupRows):     plan.DefaultConfig().AbsorbMaxReencode,
		"":                                           plan.DefaultConfig().AbsorbMaxReencode,
	} {
		c, err := Load(nil, func(k string) string {
			if k == "SIGLAKE_MERGE_SPLICE_MIN_ROWS" {
				return minRows
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		pc, err := PlanConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		if pc.AbsorbMaxReencode != want {
			t.Errorf("SIGLAKE_MERGE_SPLICE_MIN_ROWS=%q: AbsorbMaxReencode %v, want %v", minRows, pc.AbsorbMaxReencode, want)
		}
	}
}

// TestSettingsCheckedTogetherAtLoad (promise 8): values each option accepts alone but the planner,
// the merges or gossip cannot use together fail Load, with the options' flag and env names.
func TestSettingsCheckedTogetherAtLoad(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"SIGLAKE_COMPACTOR_MAX_FANIN": "1"}, []string{"--max-fan-in", "SIGLAKE_COMPACTOR_MAX_FANIN", "from 2 to 1024"}},
		{map[string]string{"SIGLAKE_COMPACTOR_MAX_FANIN": "5000"}, []string{"--max-fan-in", "SIGLAKE_COMPACTOR_MAX_FANIN"}},
		{map[string]string{"SIGLAKE_INDEX_FOOTER_MAX_BYTES": "0"}, []string{"--index-footer-max-bytes", "SIGLAKE_INDEX_FOOTER_MAX_BYTES", "SIGLAKE_INVERTED_INDEX=off"}},
		{map[string]string{"SIGLAKE_GOSSIP_BIND": "127.0.0.1:7946", "SIGLAKE_GOSSIP_PROBE_TIMEOUT": "3s"},
			[]string{"SIGLAKE_GOSSIP_PROBE_TIMEOUT", "SIGLAKE_GOSSIP_PROBE_INTERVAL"}},
		{map[string]string{"SIGLAKE_GOSSIP_BIND": "not-an-ip:7946"}, []string{"SIGLAKE_GOSSIP_BIND"}},
		{map[string]string{"SIGLAKE_MERGE_PARQUET_ENCODER": "parquet"}, []string{"--merge-parquet-encoder", "SIGLAKE_MERGE_PARQUET_ENCODER", "auto, arrow, parquet-go"}},
		{map[string]string{"SIGLAKE_MERGE_PARQUET_DECODER": "pq"}, []string{"--merge-parquet-decoder", "SIGLAKE_MERGE_PARQUET_DECODER", "arrow, parquet-go"}},
	} {
		_, err := Load(nil, func(k string) string { return tc.env[k] })
		if err == nil {
			t.Errorf("%v: Load accepted it", tc.env)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %q", tc.env, err, w)
			}
		}
	}
	// The planner's own check stays behind Load's: a Config made in code is refused by it too.
	c, _ := Load(nil, func(string) string { return "" })
	c.MaxFanIn = 1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "SIGLAKE_COMPACTOR_MAX_FANIN") {
		t.Fatalf("Validate of fan-in 1: %v", err)
	}
}

// TestErrorsNameRealEnvVars: every SIGLAKE_* name the code puts in an error or log message is an
// option the binary reads (gossip's errors once cited SIGLAKE_GOSSIP_PROBE_INTERVAL_MS).
func TestErrorsNameRealEnvVars(t *testing.T) {
	known := map[string]bool{}
	for _, e := range EnvNames() {
		known[e] = true
	}
	re := regexp.MustCompile(`SIGLAKE_[A-Z0-9_]+`)
	root := filepath.Join("..", "..")
	for _, dir := range []string{"gossip", "sidecar", "sidecar/lake", "sidecar/plan", "sidecar/claim", "sidecar/deletes", "sidecar/puffinidx", "merge", "localwal"} {
		files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range re.FindAllString(string(b), -1) {
				if !known[name] {
					t.Errorf("%s names %s, which no option reads", f, name)
				}
			}
		}
	}
}

// TestCancelPeriodRefusesWrapping: a cancel period that is not a number or too large used to wrap
// to a negative period, read as none: requests ran at once. It fails at start, naming the option.
func TestCancelPeriodRefusesWrapping(t *testing.T) {
	for _, v := range []string{"20000w", "1e5w", "NaNd", "nand", "-1d"} {
		_, err := Load(nil, func(k string) string {
			if k == "SIGLAKE_DELETE_CANCEL_PERIOD" {
				return v
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), "SIGLAKE_DELETE_CANCEL_PERIOD") || !strings.Contains(err.Error(), "accepted:") {
			t.Errorf("SIGLAKE_DELETE_CANCEL_PERIOD=%s: %v, want a refusal naming the option and what is accepted", v, err)
		}
	}
	if c, err := Load([]string{"--delete-cancel-period", "3d"}, func(string) string { return "" }); err != nil || c.DeleteCancelPeriod.Hours() != 72 {
		t.Fatalf("--delete-cancel-period 3d: %v, %v", c.DeleteCancelPeriod, err)
	}
}

// TestCommitTimeoutLowerBound: a --commit-timeout under 5s would abandon every healthy commit; it
// is refused naming the option and what is accepted.
func TestCommitTimeoutLowerBound(t *testing.T) {
	env := func(string) string { return "" }
	for _, args := range [][]string{{"--commit-timeout", "1ms"}, {"--commit-timeout", "4s"}} {
		_, err := Load(args, env)
		if err == nil || !strings.Contains(err.Error(), "--commit-timeout / SIGLAKE_COMMIT_TIMEOUT") || !strings.Contains(err.Error(), "at least 5s") {
			t.Errorf("%v: %v, want an error naming the option and 5s", args, err)
		}
	}
	if c, err := Load([]string{"--commit-timeout", "5s"}, env); err != nil || c.CommitTimeout != 5*time.Second {
		t.Errorf("5s: %v %v", c.CommitTimeout, err)
	}
	if _, err := Load([]string{"--commit-timeout", "1ms"}, func(k string) string {
		if k == testMinCommitTimeoutEnv {
			return "1ms"
		}
		return ""
	}); err != nil {
		t.Errorf("with the test hook: %v", err)
	}
}

// TestDurationOptionsOneSyntax: every option whose value is a duration reads the one duration
// syntax (package duration): days, weeks and combinations, and refuses a negative one naming the
// option and what is accepted. An option with a range (--group-commit-interval) may refuse a
// value outside it, with a RangeError: the value parsed.
func TestDurationOptionsOneSyntax(t *testing.T) {
	isDuration := regexp.MustCompile(`^[0-9]+(ms|s|m|h|d|w)$`)
	n := 0
	for _, o := range Options() {
		if !isDuration.MatchString(o.Default) {
			continue
		}
		n++
		for _, v := range []string{"1d", "1w", "1h30m", "1d12h", "1w2d"} {
			_, err := Load([]string{"--" + o.Flag, v}, func(string) string { return "" })
			if re := (*RangeError)(nil); err != nil && (!errors.As(err, &re) || !strings.Contains(err.Error(), o.Env)) {
				t.Errorf("--%s %s: %v", o.Flag, v, err)
			}
		}
		_, err := Load(nil, func(k string) string {
			if k == o.Env {
				return "-1h"
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), o.Env) || !strings.Contains(err.Error(), "accepted") {
			t.Errorf("%s=-1h: %v, want a refusal naming the option and what is accepted", o.Env, err)
		}
	}
	if n < 5 {
		t.Fatalf("only %d duration options found", n)
	}
}

// TestParquetEncoderLoads: SIGLAKE_MERGE_PARQUET_ENCODER selects the encoder, auto unless set.
func TestParquetEncoderLoads(t *testing.T) {
	for v, want := range map[string]writer.Encoder{"": writer.EncoderAuto, "Auto": writer.EncoderAuto, "arrow": writer.EncoderArrow, "parquet-go": writer.EncoderParquetGo, "Parquet-Go": writer.EncoderParquetGo} {
		c, err := Load(nil, func(k string) string {
			if k == "SIGLAKE_MERGE_PARQUET_ENCODER" {
				return v
			}
			return ""
		})
		if err != nil || c.MergeParquetEncoder != want {
			t.Errorf("SIGLAKE_MERGE_PARQUET_ENCODER=%q: encoder %q (%v), want %q", v, c.MergeParquetEncoder, err, want)
		}
	}
}

// TestParquetDecoderLoads: SIGLAKE_MERGE_PARQUET_DECODER selects the k-way decoder, parquet-go's unless set.
func TestParquetDecoderLoads(t *testing.T) {
	for v, want := range map[string]merge.Decoder{"": merge.DecoderParquetGo, "arrow": merge.DecoderArrow, "parquet-go": merge.DecoderParquetGo, " PARQUET-GO": merge.DecoderParquetGo} {
		c, err := Load(nil, func(k string) string {
			if k == "SIGLAKE_MERGE_PARQUET_DECODER" {
				return v
			}
			return ""
		})
		if err != nil || c.MergeParquetDecoder != want {
			t.Errorf("SIGLAKE_MERGE_PARQUET_DECODER=%q: decoder %q (%v), want %q", v, c.MergeParquetDecoder, err, want)
		}
	}
}
