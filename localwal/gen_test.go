package localwal

import "github.com/siglake/siglake/localwal/internal/waltest"

// The test data of this package and its writer's.
var (
	t0        = waltest.T0
	logSchema = waltest.LogSchema
	newLogGen = waltest.NewLogGen
	rawBytes  = waltest.RawBytes
)
