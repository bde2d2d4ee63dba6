// Package puffinidx is the post-rewrite index rebuild (compactor.indexRebuild): it builds the
// inverted indexes a streamed rewrite left out of its outputs' footers, writes them as Puffin
// sidecars and registers them in a table property, and it finds a live file's index again
// (footer first, then a registered sidecar). Formats: docs/file-format.md.
//
// Registrations live in table properties, not in Iceberg statistics files: a statistics file
// belongs to one snapshot and snapshot expiry drops it with that snapshot, while a property
// survives expiry and changes only through a catalog compare-and-swap commit. So the
// registration of a file lasts exactly as long as we say (until the file is no longer live).
package puffinidx

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// PropertyPrefix prefixes the table property registering one data file's sidecars; the data
// file's base name (unique: a fresh UUID) follows.
const PropertyPrefix = tableprops.PuffinPrefix

// registrationProperty reads and writes registrations; the version is in the prefix (v1), and a
// registration belongs under its data file's key.
var registrationProperty = tableprops.Codec[Registration]{Name: PropertyPrefix, What: "index registration",
	KeyOf: func(r Registration) string { return Key(r.DataFile) },
	Check: func(r Registration) error {
		if r.DataFile == "" {
			return errors.New("a registration without data_file")
		}
		return nil
	}}

// Registration is the value of one data file's property.
type Registration struct {
	DataFile string    `json:"data_file"` // full path, as in the manifests
	Sidecars []Sidecar `json:"sidecars"`
}

// Sidecar is one Puffin file holding inverted indexes of some columns of the data file.
type Sidecar struct {
	Path       string   `json:"path"`
	Columns    []string `json:"columns"`
	SnapshotID int64    `json:"snapshot_id"` // the rewrite that wrote the data file
}

// Key is the property key registering dataFile.
func Key(dataFile string) string { return PropertyPrefix + path.Base(dataFile) }

// Columns lists every column some sidecar of the registration indexes.
func (r Registration) Columns() []string {
	var out []string
	for _, s := range r.Sidecars {
		out = append(out, s.Columns...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sidecarFor returns the sidecar that indexes column.
func (r Registration) sidecarFor(column string) (Sidecar, bool) {
	for _, s := range r.Sidecars {
		if slices.Contains(s.Columns, column) {
			return s, true
		}
	}
	return Sidecar{}, false
}

// Registry is a table's registrations, by data file path.
type Registry map[string]Registration

// Parse reads the registrations out of table properties. A malformed value is reported and left
// out (its file is treated as unindexed: a gap costs pruning, never correctness).
func Parse(props map[string]string) (Registry, error) {
	reg := Registry{}
	entries, errs := registrationProperty.List(props)
	for _, e := range entries {
		reg[e.Value.DataFile] = e.Value
	}
	if len(errs) > 0 {
		return reg, fmt.Errorf("%w (want JSON {data_file, sidecars} under %s<data file name>)", errors.Join(errs...), PropertyPrefix)
	}
	return reg, nil
}

// Encode is the property value of r.
func (r Registration) Encode() string {
	s, _ := registrationProperty.Encode(r) // strings, ints and slices only: cannot fail
	return s
}

// PuffinPaths returns every registered sidecar path (what gc must keep).
func (reg Registry) PuffinPaths() map[string]bool {
	out := map[string]bool{}
	for _, r := range reg {
		for _, s := range r.Sidecars {
			out[s.Path] = true
		}
	}
	return out
}

// StaleKeys returns the property keys of registrations whose data file is not live, sorted.
// Data file names are fresh UUIDs, so a file that left the table never comes back.
func StaleKeys(props map[string]string, live func(dataFile string) bool) []string {
	reg, _ := Parse(props)
	var out []string
	for f := range reg {
		if !live(f) {
			out = append(out, Key(f))
		}
	}
	sort.Strings(out)
	return out
}

// Referenced returns the Puffin files t's registrations name: objects that only a table property
// references, which `siglake gc` must keep (orphans.Options.Keep). A malformed registration is an
// error, so gc deletes nothing in a table whose registrations it cannot read: fix or remove those
// properties first.
func Referenced(t *table.Table) ([]string, error) {
	reg, err := Parse(t.Properties())
	if err != nil {
		return nil, fmt.Errorf("%w (fix or remove those properties)", err)
	}
	out := make([]string, 0, len(reg))
	for p := range reg.PuffinPaths() {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}
