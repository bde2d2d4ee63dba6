package main

import (
	"testing"

	"github.com/siglake/siglake/merge"
)

// TestFellBack: a pq-decode contender fails only when its k-way bin was decoded by arrow-go.
func TestFellBack(t *testing.T) {
	for _, c := range []struct {
		want merge.Decoder
		res  merge.RewriteResult
		fail bool
	}{
		{merge.DecoderParquetGo, merge.RewriteResult{Path: merge.PathKWay, Decoder: merge.DecoderArrow}, true},
		{merge.DecoderParquetGo, merge.RewriteResult{Path: merge.PathKWay, Decoder: merge.DecoderParquetGo}, false},
		{merge.DecoderParquetGo, merge.RewriteResult{Path: merge.PathSplice}, false},
		{merge.DecoderParquetGo, merge.RewriteResult{Path: merge.PathPageBounded}, false},
		{merge.DecoderArrow, merge.RewriteResult{Path: merge.PathKWay, Decoder: merge.DecoderArrow}, false},
	} {
		if err := fellBack("c", c.want, c.res); (err != nil) != c.fail {
			t.Errorf("%s asked, %s on %s: error %v, want failure %v", c.want, c.res.Decoder, c.res.Path, err, c.fail)
		}
	}
}
