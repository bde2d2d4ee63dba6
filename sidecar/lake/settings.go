package lake

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// Table settings siglake reads from a table's properties (docs/configuration.md "Table properties").

// IndexAtFlushProperty is the table property behind the table setting index_at_flush: "true" makes
// generation-0 writes (drain flushes) do the whole-file index work too; default false.
const IndexAtFlushProperty = tableprops.IndexAtFlush

// IndexColumnsProperty is the table property behind the table's index specification: the
// comma-separated columns that get an inverted index (footer, or a Puffin sidecar from the
// rebuild). Unset: none.
const IndexColumnsProperty = tableprops.IndexColumns

// IndexColumns returns the columns t's index specification names, in order, without repeats.
func IndexColumns(t *table.Table) []string { return IndexColumnsOf(t.Properties()) }

// IndexColumnsOf is IndexColumns over a table's properties.
func IndexColumnsOf(props iceberg.Properties) []string {
	var out []string
	for _, c := range strings.Split(props[IndexColumnsProperty], ",") {
		if c = strings.TrimSpace(c); c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// WriteMetadata is the search metadata a write to t produces: the table's index_at_flush setting
// and index specification, with the process's switch for footer inverted indexes and their size
// limit.
func WriteMetadata(t *table.Table, invertedIndexOff bool, footerMaxBytes int64) merge.MetadataOptions {
	atFlush, _ := ParseBool(t.Properties()[IndexAtFlushProperty])
	return merge.MetadataOptions{InvertedIndexOff: invertedIndexOff, FooterMaxBytes: footerMaxBytes, IndexAtFlush: atFlush,
		IndexColumns: IndexColumns(t)}
}

// ParseBool accepts the spellings DESIGN.md promises for every switch, option or table setting:
// 1/0, true/false, on/off, yes/no.
func ParseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "on", "yes":
		return true, nil
	case "0", "false", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("accepted: 1/0, true/false, on/off, yes/no")
}

// MetadataFunc says what search metadata a write to a table produces (the process's WriteMetadata
// with its options bound); the loops take one in their configuration.
type MetadataFunc func(t *table.Table) merge.MetadataOptions

// For is f's metadata for t; a nil f writes the defaults.
func (f MetadataFunc) For(t *table.Table) merge.MetadataOptions {
	if f == nil {
		return merge.MetadataOptions{}
	}
	return f(t)
}

// MergeProps is what to set on a table whose properties are current so that its appends merge
// manifests from minCount on (iceberg-go's merge append: the bin holding the new manifest is
// merged once it holds minCount manifests, older bins whenever they hold more than one), or nil
// when they do already. minCount 0 (off) leaves the table's own settings alone: a table may have
// been set to merge by other means.
func MergeProps(current iceberg.Properties, minCount int) iceberg.Properties {
	if minCount <= 0 {
		return nil
	}
	want := iceberg.Properties{table.ManifestMergeEnabledKey: "true", table.ManifestMinMergeCountKey: strconv.Itoa(minCount)}
	if current.GetBool(table.ManifestMergeEnabledKey, table.ManifestMergeEnabledDefault) &&
		current.GetInt(table.ManifestMinMergeCountKey, table.ManifestMinMergeCountDefault) == minCount {
		return nil
	}
	return want
}
