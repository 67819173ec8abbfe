package proxycore

import (
	"errors"
	"io"
)

// Chunk extensions. fasthttp's server parses a chunked request body
// itself, and reads a chunk's extensions (";name=value" after its size)
// to the end of the line however long they are: bytes that cost the
// proxy reads and time but carry nothing, and that a proxy in front may
// measure differently. net/http refuses a chunked body whose non-data
// bytes (size lines with their extensions, and CRLFs) go past a budget:
// 16 KiB, less 16 bytes and twice the data of each chunk read
// (net/http/internal's chunkedReader, "too much non-data"). Ebb keeps the
// same budget from outside the parser: while a chunked body is read, the
// client connection counts the bytes read from it (progressConn), and the
// body stream counts the data it returns and its reads, each read at most
// one chunk (fasthttp's stream returns no more), so each read earns the
// credit of a chunk. The bytes the server's reader held before the body
// or holds after it (the next request) are at most its buffer
// (MaxRequestHeadBytes), which is subtracted: a body is refused once its
// non-data bytes are surely past the budget, at most that buffer later
// than net/http would. The read that goes past fails, the body stream
// with it (a ClientError: 400, and the connection closed).

// errChunkOverhead: a chunked request body carried more besides its data
// (chunk extensions) than net/http allows.
var errChunkOverhead = errors.New("chunked body: too many bytes besides data (chunk extensions): " +
	"at most 16 KiB, plus 16 bytes and twice the data per chunk")

// The budget of non-data bytes, as net/http's.
const (
	maxChunkNonData = 16 << 10
	chunkCredit     = 16 + 2 // net/http's 16 a chunk, and the CRLF of the size line it does not count
)

// chunkMeter is what a client connection knows of the chunked body being
// read from it. The zero value meters nothing.
type chunkMeter struct {
	total int64 // bytes read from the connection, ever
	on    bool  // a chunked body is being read
	start int64 // total when it began
	data  int64 // its data bytes returned so far
	reads int64 // reads of its stream so far
}

// over reports whether the body's non-data bytes are surely past the
// budget.
func (m *chunkMeter) over() bool {
	if !m.on {
		return false
	}
	nonData := m.total - m.start - MaxRequestHeadBytes - m.data
	return nonData > maxChunkNonData+chunkCredit*m.reads+2*m.data
}

// meteredChunks is a chunked body stream read from a progressConn.
type meteredChunks struct {
	r     io.Reader
	m     *chunkMeter
	lines chunkLines // each size line within net/http's limit (chunkline.go)
}

func (b *meteredChunks) Read(p []byte) (int, error) {
	if err := b.lines.check(); err != nil {
		return 0, err
	}
	n, err := b.r.Read(p)
	b.m.data += int64(n)
	b.m.reads++
	return n, err
}

// meterChunks returns the stream r of a chunked body read from client,
// metered when client is a proxy's client connection, and the meter,
// whose stop ends the metering (nil: none; stop is then a no-op).
func meterChunks(r io.Reader, client any) (io.Reader, *chunkMeter) {
	c, ok := client.(*progressConn)
	if !ok {
		return r, nil
	}
	m := &c.chunks
	m.on, m.start, m.data, m.reads = true, m.total, 0, 0
	c.chunkBody = meteredChunks{r: r, m: m, lines: linesOf(r)}
	return &c.chunkBody, m
}

// stop ends the metering of a body.
func (m *chunkMeter) stop() {
	if m != nil {
		m.on = false
	}
}
