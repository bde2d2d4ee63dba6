package merge

import (
	"crypto/rand"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// DataFileName returns the base name for a new output file. The generation is
// part of the name so the planner can read it back from a manifest path alone
// (the level policy needs it and Iceberg has no field for it):
// "g0003-<uuid>.parquet".
func DataFileName(generation int) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return fmt.Sprintf("g%04d-%x-%x-%x-%x-%x.parquet", generation, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ParseGeneration reads the generation from a path written with DataFileName.
// Files named otherwise (written by another tool) report false; callers treat
// them as generation 0.
func ParseGeneration(p string) (int, bool) {
	base := path.Base(strings.ReplaceAll(p, "\\", "/"))
	if len(base) < 3 || base[0] != 'g' {
		return 0, false
	}
	dash := strings.IndexByte(base, '-')
	if dash < 2 || !strings.HasSuffix(base, ".parquet") {
		return 0, false
	}
	g, err := strconv.Atoi(base[1:dash])
	if err != nil || g < 0 {
		return 0, false
	}
	return g, true
}
