package chart

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/siglake/siglake/sidecar/config"
)

// valueCase is one input of a chart value that renders an option of the binary: whether the chart
// must accept it, and, for a value the chart refuses though the binary would take it, why the
// chart is stricter (empty: the binary refuses it too).
type valueCase struct {
	json     string // the value, as JSON (--set-json)
	accepted bool
	stricter string
}

func ok(v string) valueCase            { return valueCase{json: v, accepted: true} }
func no(v string) valueCase            { return valueCase{json: v} }
func stricter(v, why string) valueCase { return valueCase{json: v, stricter: why} }

const (
	leadingDot = "a leading dot (.5h): the schema wants a digit first"
	compound   = "a compound period (36h30m): the schema takes one unit, hours at least 24"
	mountAbs   = "it is also the containers' volume mount path, which Kubernetes wants absolute"
	overflowOK = "past the schema's digit caps, which keep every accepted sum below time.Duration's 292 years"
)

// chartValueCases: for every chart value that renders an option of the binary, inputs the chart
// must accept and inputs it must refuse. Integer bounds are TestSchemaBoundsMatchBinary's; these
// are the string forms (durations, periods, URIs, names) a bound cannot describe.
var chartValueCases = map[string][]valueCase{
	"compactor.role":                {ok(`"all"`), ok(`"drain"`), ok(`"maintenance"`), no(`"compact"`), no(`""`)},
	"compactor.mergeParquetEncoder": {ok(`"arrow"`), ok(`"parquet-go"`), no(`"parquet"`), no(`""`)},
	"compactor.mergeParquetDecoder": {ok(`"arrow"`), ok(`"parquet-go"`), no(`"parquet"`), no(`""`)},
	"compactor.retention.period": {
		ok(`"0"`), ok(`0`), ok(`"forever"`), ok(`"1d"`), ok(`"30d"`), ok(`"1.5d"`), ok(`"4w"`), ok(`"24h"`), ok(`"36h"`),
		ok(`"99999d"`), ok(`"9999w"`), ok(`"999999h"`),
		no(`"5h"`), no(`"23h"`), no(`"0.5d"`), no(`"0d"`), no(`"0h"`), no(`"90m"`), no(`"3600s"`), no(`"-1d"`), no(`"30"`),
		no(`"d"`), no(`"1e3d"`), no(`"NaNd"`), no(`"999999999d"`), no(`"99999999999h"`), no(`1`), no(`"30 d"`),
		stricter(`"36h30m"`, compound), stricter(`"1440m"`, compound), stricter(`".5w"`, leadingDot),
	},
	"compactor.deleteCancelPeriod": {
		ok(`"0"`), ok(`"24h"`), ok(`"90s"`), ok(`"30m"`), ok(`"2d"`), ok(`"1w"`), ok(`"1.5h"`), ok(`"1h30m"`), ok(`"500ms"`),
		ok(`"0s"`), ok(`"0d"`), ok(`"99999d"`), ok(`"9999w"`), ok(`"99999h999999m9999999s999999999ms"`),
		no(`"-1h"`), no(`"1x"`), no(`"24"`), no(`""`), no(`"1e3s"`), no(`"999999999d"`), no(`"9999999999h"`),
		stricter(`"1d2h"`, "days combined with hours (1d2h): the schema takes days or weeks alone"),
		stricter(`".5h"`, leadingDot), stricter(`"999999h"`, overflowOK),
	},
	"compactor.retention.deleteDelay": {
		ok(`"2h"`), ok(`"0"`), ok(`"0s"`), ok(`"30m"`), ok(`"1d"`), ok(`"1w"`), ok(`"1h30m"`),
		no(`"-2h"`), no(`"2"`), no(`""`), no(`"999999999d"`), no(`"forever"`),
		stricter(`".5h"`, leadingDot),
	},
	"compactor.commitTimeout": {
		ok(`"2m"`), ok(`"5s"`), ok(`"5.5s"`), ok(`"30s"`), ok(`"1h"`), ok(`"1d"`), ok(`"1m30s"`), ok(`"5000ms"`), ok(`"1h0m0s"`),
		no(`"4s"`), no(`"4.9s"`), no(`"1s"`), no(`"0"`), no(`"0s"`), no(`"500ms"`), no(`"4999ms"`), no(`"-2m"`), no(`"2"`), no(`""`),
		no(`"999999999d"`),
		stricter(`"0m5s"`, "a zero leading unit: the schema wants the first unit above 0"),
		stricter(`"0.1m"`, "a fraction below 1 of a unit (0.1m is 6s): the schema wants the leading number at least 1"),
	},
	"commitBatch.groupCommit.interval": {
		ok(`"1s"`), ok(`"100ms"`), ok(`"999ms"`), ok(`"60s"`), ok(`"1m"`), ok(`"60000ms"`), ok(`"59s"`),
		no(`"99ms"`), no(`"61s"`), no(`"60001ms"`), no(`"2m"`), no(`"0"`), no(`"0s"`), no(`"-1s"`), no(`"1"`), no(`""`), no(`"1d"`),
		stricter(`"1.5s"`, "a fraction: the schema takes whole numbers of one unit"),
		stricter(`"1m0s"`, "a compound duration: the schema takes one unit"),
	},
	"commitBatch.groupCommit.maxWait": {
		ok(`"4s"`), ok(`"0"`), ok(`"0s"`), ok(`"0ms"`), ok(`"100ms"`), ok(`"60s"`), ok(`"1m"`), ok(`"60000ms"`),
		no(`"99ms"`), no(`"61s"`), no(`"2m"`), no(`"-1s"`), no(`"4"`), no(`""`), no(`"1d"`),
		stricter(`"1.5s"`, "a fraction: the schema takes whole numbers of one unit"),
		stricter(`"1m0s"`, "a compound duration: the schema takes one unit"),
	},
	"commitBatch.groupCommit.fallbackAfter": {
		ok(`"30s"`), ok(`"1s"`), ok(`"10s"`), ok(`"1ms"`), ok(`"30000ms"`),
		no(`"0"`), no(`"0s"`), no(`"-1s"`), no(`"30"`), no(`""`), no(`"soon"`),
		stricter(`"31s"`, "above 30s, 6 times the least commitTimeout: the binary takes it with a commitTimeout of at least a sixth of it"),
		stricter(`"1m"`, "above 30s, 6 times the least commitTimeout: the binary takes it with a commitTimeout of at least a sixth of it"),
		stricter(`"2.5s"`, "a fraction: the schema takes whole numbers of one unit"),
	},
	"compactor.binLeases.duration": {
		ok(`"2m"`), ok(`"10s"`), ok(`"600s"`), ok(`"10m"`), ok(`"10000ms"`), ok(`"600000ms"`), ok(`"99s"`),
		no(`"9s"`), no(`"11m"`), no(`"601s"`), no(`"9999ms"`), no(`"0"`), no(`"0s"`), no(`"-1m"`), no(`"120"`), no(`""`), no(`"1h"`),
		stricter(`"1.5m"`, "a fraction: the schema takes whole numbers of one unit"),
		stricter(`"1m30s"`, "a compound duration: the schema takes one unit"),
	},
	"compactor.binLeases.ownerWait": {
		ok(`"10s"`), ok(`"0"`), ok(`"0s"`), ok(`"600s"`), ok(`"10m"`), ok(`"500ms"`), ok(`"600000ms"`),
		no(`"11m"`), no(`"601s"`), no(`"600001ms"`), no(`"-1s"`), no(`"10"`), no(`""`), no(`"1h"`),
		stricter(`"1.5s"`, "a fraction: the schema takes whole numbers of one unit"),
		stricter(`"1m30s"`, "a compound duration: the schema takes one unit"),
	},
	"compactor.markPruneAfter": {
		ok(`"7d"`), ok(`"0"`), ok(`"24h"`), ok(`"1d"`), ok(`"2w"`), ok(`"999999h"`), ok(`"99999d"`), ok(`"9999w"`),
		no(`"23h"`), no(`"1h"`), no(`"-1d"`), no(`"7"`), no(`""`), no(`"999999999d"`),
		stricter(`0`, "a number: the schema wants a string"), stricter(`"0d"`, "0 with a unit: the schema takes \"0\" alone"),
		stricter(`"1d12h"`, "days combined with hours: the schema takes one unit"),
		stricter(`"1.5d"`, "a fraction: the schema takes whole numbers of one unit"),
		stricter(`"0s"`, "0 with a unit: the schema takes \"0\" alone"),
	},
	"gossip.keyMigration": {ok(`""`), ok(`"accept"`), ok(`"send"`), no(`"yes"`), no(`"Accept"`)},
	"catalog.uri": {
		ok(`"sqlite:/var/lib/siglake/data/catalog.db"`), ok(`"postgres://pg:5432/siglake"`), ok(`"postgresql://pg/siglake"`),
		ok(`"rest+https://catalog.example/api"`), ok(`"rest+http://catalog:8181"`),
		no(`"mysql://x"`), no(`""`), no(`"https://catalog"`),
		stricter(`"sqlite:"`, "sqlite: without a path: the schema wants the database file"),
	},
	"warehouse.uri": {
		ok(`"/var/lib/siglake/data/warehouse"`), ok(`"file:///data/warehouse"`),
		no(`""`), no(`"gs://bucket/prefix"`),
		stricter(`"s3://"`, "an s3 URI without a bucket, which the binary refuses only at its first write"),
	},
	"catalog.namespace": {ok(`"siglake"`), ok(`"logs_2"`), no(`""`), no(`"Logs"`), no(`"a.b"`)},
	"wal.mountPath": {ok(`"/var/lib/siglake/wal"`),
		stricter(`"wal"`, mountAbs), stricter(`""`, mountAbs)},
	"gossip.clusterLabel": {
		ok(`""`), ok(`"prod-eu"`), ok(`"` + repeat("x", 255) + `"`), no(`"` + repeat("x", 256) + `"`),
	},
	"compactor.splitSparse": {ok(`0`), ok(`0.05`), ok(`0.99`), no(`1`), no(`-0.1`),
		stricter(`"0.05"`, "a string: the schema wants a number")},
}

// boolCases are the cases of a boolean value: a string is refused by the schema, though the
// binary reads 1/0, on/off and yes/no too.
var boolCases = []valueCase{ok(`true`), ok(`false`), stricter(`"yes"`, "a string: the schema wants a boolean")}

func init() {
	for _, p := range []string{"commitBatch.groupCommit.enabled", "compactor.binLeases.enabled", "compactor.catalogClaim", "compactor.deleteTasks", "compactor.indexRebuild",
		"compactor.invertedIndex.enabled", "compactor.leveled", "compactor.walBuffer.enabled", "warehouse.s3.pathStyle"} {
		chartValueCases[p] = boolCases
	}
}

// valuesWithoutStringForms are chart values that render options but have no string form to
// probe: integers (their bounds are TestSchemaBoundsMatchBinary's), free text the binary takes as
// is, and values that name a Secret.
var valuesWithoutStringForms = map[string]string{
	"commitBatch.maxAgeSecs":               "integer",
	"commitBatch.targetMb":                 "integer",
	"commitBatch.groupCommit.maxFiles":     "integer",
	"commitBatch.groupCommit.targetMb":     "integer",
	"commitBatch.groupCommit.queueMax":     "integer",
	"compactor.manifestMerge.minCount":     "integer",
	"compactor.backpressureCompactEvery":   "integer",
	"compactor.indexFooterMaxBytes":        "integer",
	"compactor.levelMaxGen":                "integer",
	"compactor.maxFanIn":                   "integer",
	"compactor.maxOverlapDepth":            "integer",
	"compactor.maxSealedForRecluster":      "integer",
	"compactor.reclusterIntervalSecs":      "integer",
	"compactor.retention.intervalSecs":     "integer",
	"snapshotExpire.intervalSecs":          "integer",
	"snapshotExpire.retain":                "integer",
	"wal.segmentMaxMb":                     "integer",
	"http.port":                            "integer",
	"gossip.port":                          "integer",
	"gossip.join":                          "free text: host:port peers or DNS names, which the binary resolves at run time",
	"gossip.keySecret.name":                "names a Secret; the option gets the mounted file's path",
	"warehouse.s3.endpoint":                "a URL the S3 client reaches at run time",
	"warehouse.s3.region":                  "free text",
	"warehouse.s3.existingSecret":          "names a Secret",
	"compactor.walBuffer.tokenSecret.name": "names a Secret; the option gets the mounted file's path",
	"compactor.walBuffer.tls.secretName":   "names a Secret; the options get the mounted files' paths",
	"compactor.walBuffer.tls.clientCA":     "a boolean that mounts the TLS Secret's ca.crt; its refusals are the template's (TestWALBufferAuthRenderFailures)",
	"compactor.walBuffer.insecureNoAuth":   "a boolean opt-out rendered only with the buffer on beyond loopback (TestWALBufferAuthRenders)",
}

func repeat(s string, n int) string {
	out := make([]byte, 0, n*len(s))
	for range n {
		out = append(out, s...)
	}
	return string(out)
}

// TestSchemaAgreesWithBinary: every chart value that renders an option of the binary has a table of
// inputs, and for each the chart's verdict (helm template with values.schema.json and the
// templates' checks) is the table's, and whatever the chart accepts the binary accepts: its option
// parser and the planner's validation run on the environment rendered from the same value. A value
// the chart refuses is also run through a copy of the chart without its schema, so the table says
// where the chart is stricter than the binary and why. A value the schema passes and the binary
// refuses is a crash loop at start instead of a render error.
func TestSchemaAgreesWithBinary(t *testing.T) {
	dir := chartDir(t)
	noSchema := filepath.Join(t.TempDir(), chartName)
	copyTree(t, dir, noSchema)
	if err := os.Remove(filepath.Join(noSchema, "values.schema.json")); err != nil {
		t.Fatal(err)
	}
	chartValues := map[string][]string{}
	for _, o := range config.Options() {
		if o.Chart != "" {
			chartValues[o.Chart] = append(chartValues[o.Chart], o.Env)
		}
	}
	var paths []string
	for p := range chartValues {
		paths = append(paths, p)
		_, cased := chartValueCases[p]
		_, skipped := valuesWithoutStringForms[p]
		if cased == skipped {
			t.Errorf("%s (%v): want it in exactly one of chartValueCases and valuesWithoutStringForms", p, chartValues[p])
		}
	}
	for p := range chartValueCases {
		if chartValues[p] == nil {
			t.Errorf("chartValueCases has %s, which renders no option of the binary", p)
		}
	}
	for p := range valuesWithoutStringForms {
		if chartValues[p] == nil {
			t.Errorf("valuesWithoutStringForms has %s, which renders no option of the binary", p)
		}
	}
	sort.Strings(paths)
	total, stricterN := 0, 0
	for _, path := range paths {
		cases, listed := chartValueCases[path]
		if !listed {
			continue
		}
		var accepted, refused int
		for _, c := range cases {
			total++
			if c.stricter != "" {
				stricterN++
			}
			rerr, berr := binaryVerdict(t, dir, path, c.json)
			switch {
			case rerr == nil && berr != nil:
				t.Errorf("%s=%s: the chart renders it, the binary refuses it at start (%v): %v", path, c.json, chartValues[path], berr)
			case c.accepted && rerr != nil:
				t.Errorf("%s=%s: the chart refuses it, want accepted: %v", path, c.json, rerr)
			case !c.accepted && rerr == nil:
				t.Errorf("%s=%s: the chart renders it, want refused", path, c.json)
			}
			if c.accepted {
				accepted++
				continue
			}
			refused++
			// What would the binary say? Rendered without the schema (a template check may still
			// refuse it, which is a render error too).
			nrerr, nberr := binaryVerdict(t, noSchema, path, c.json)
			binaryTakes := nrerr == nil && nberr == nil
			switch {
			case binaryTakes && c.stricter == "":
				t.Errorf("%s=%s: the chart refuses it but the binary takes it: mark the case stricter, with why", path, c.json)
			case !binaryTakes && c.stricter != "":
				t.Errorf("%s=%s is marked stricter (%s), but the binary refuses it too: %v %v", path, c.json, c.stricter, nrerr, nberr)
			}
		}
		if accepted == 0 || refused == 0 {
			t.Errorf("%s: %d accepted and %d refused cases; want both", path, accepted, refused)
		}
	}
	t.Logf("%d inputs of %d chart values checked against the binary (%d where the chart is stricter)", total, len(chartValueCases), stricterN)
}
