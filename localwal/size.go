package localwal

import (
	"os"

	"github.com/siglake/siglake/localwal/internal/ipcmsg"
)

// DecodedSize estimates what decoding the segment at path allocates beyond
// its file bytes, from the IPC metadata alone (it reads the metadata and
// the 8-byte length prefix of each compressed buffer, not the bodies).
// An uncompressed batch decodes in place and adds nothing; a compressed
// one adds the uncompressed length of each buffer. A file it cannot walk
// (damaged: the reader will quarantine it) ends the estimate where it
// stops making sense; callers add their own margin.
func DecodedSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return ipcmsg.DecodedSize(f, fi.Size(), MaxMetadataBytes), nil
}
