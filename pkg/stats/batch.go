package stats

import (
	"encoding/binary"
	"fmt"
)

// BatchContentType is the media type of a batch of Stats, what an activator
// POSTs to the autoscaler's BatchPath every reporting period.
const BatchContentType = "application/vnd.ebb.stats-batch.v1"

// BatchPath is where the autoscaler takes batches: an activator POSTs a
// batch (BatchContentType) to BatchPath.
const BatchPath = "/v1/stats"

// A batch is a sequence of encoded Stats, each preceded by its length as a
// big-endian uint16:
//
//	len(stat 1) stat 1, len(stat 2) stat 2, ...
//
// An empty batch is valid. The receiver bounds the number of Stats it takes.

// AppendBatch appends the Stats as a batch to dst.
func AppendBatch(dst []byte, ss []Stat) ([]byte, error) {
	for i := range ss {
		at := len(dst)
		dst = append(dst, 0, 0)
		var err error
		if dst, err = ss[i].appendBinary(dst); err != nil {
			return dst[:at], fmt.Errorf("encoding stat %d of the batch: %w", i, err)
		}
		binary.BigEndian.PutUint16(dst[at:], uint16(len(dst)-at-2))
	}
	return dst, nil
}

// ParseBatch decodes a batch of at most limit Stats. On an error it returns
// the Stats decoded before it, and the error says which one failed.
func ParseBatch(b []byte, limit int) ([]Stat, error) {
	var out []Stat
	for i := 0; len(b) > 0; i++ {
		if i >= limit {
			return out, fmt.Errorf("batch: more than %d stats: %w", limit, errInvalid)
		}
		if len(b) < 2 {
			return out, fmt.Errorf("batch: stat %d: length prefix cut short: %w", i, errShort)
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b)-2 < n {
			return out, fmt.Errorf("batch: stat %d: %d bytes announced, %d left: %w", i, n, len(b)-2, errShort)
		}
		var s Stat
		if err := s.UnmarshalBinary(b[2 : 2+n]); err != nil {
			return out, fmt.Errorf("batch: stat %d: %w", i, err)
		}
		out = append(out, s)
		b = b[2+n:]
	}
	return out, nil
}
