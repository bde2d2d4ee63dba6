package merge

import (
	"path"
	"strconv"
	"strings"
)

// FoldedFileName is DataFileName for a fold's output, with the fold tier every row of the file
// reached (0: the fold bucket; n: coarsened through the n-th tier) after the generation:
// "g0003-f1-<uuid>.parquet". The planner reads it back from the path alone, as the generation,
// so that a file is never coarsened twice to the same tier.
func FoldedFileName(generation, tier int) string {
	n := DataFileName(generation)
	dash := strings.IndexByte(n, '-')
	return n[:dash] + "-f" + strconv.Itoa(tier) + n[dash:]
}

// ParseFoldTier reads the tier from a path written with FoldedFileName; ok is false for a file
// never folded (drain output, other writers).
func ParseFoldTier(p string) (tier int, ok bool) {
	base := path.Base(strings.ReplaceAll(p, "\\", "/"))
	if _, ok := ParseGeneration(p); !ok {
		return 0, false
	}
	rest := base[strings.IndexByte(base, '-')+1:]
	if !strings.HasPrefix(rest, "f") {
		return 0, false
	}
	end := strings.IndexByte(rest, '-')
	if end < 2 {
		return 0, false
	}
	t, err := strconv.Atoi(rest[1:end])
	if err != nil || t < 0 {
		return 0, false
	}
	return t, true
}
