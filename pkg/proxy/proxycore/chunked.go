package proxycore

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/valyala/fasthttp"
)

// chunkedReader decodes the HTTP/1.1 chunked transfer coding (RFC 9112
// §7.1) from br without allocating. Chunk extensions are ignored; trailer
// fields are read and dropped, or handed to trailers (trailers.go).
type chunkedReader struct {
	br       *bufio.Reader
	left     int64 // bytes left in the current chunk
	needCRLF bool  // the current chunk's data ended; its CRLF is still unread
	done     bool  // the last chunk and the trailer section were read

	trailers *fasthttp.ResponseHeader // nil: trailer fields are dropped
}

// Errors of malformed chunked bodies.
var (
	errChunkSize     = errors.New("chunked body: malformed chunk size line")
	errChunkCRLF     = errors.New("chunked body: missing CRLF after chunk data")
	errChunkTrailers = errors.New("chunked body: trailer section too long")
)

const (
	maxChunkSize     = 1 << 62
	maxTrailerFields = 100
)

func (c *chunkedReader) reset(br *bufio.Reader) { *c = chunkedReader{br: br} }

func (c *chunkedReader) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		if err := c.nextChunk(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if c.left == 0 {
		c.needCRLF = true
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// nextChunk reads the previous chunk's CRLF and the next size line; on the
// last chunk it also reads the trailer section and marks the body done.
func (c *chunkedReader) nextChunk() error {
	if c.needCRLF {
		line, err := readLine(c.br)
		if err != nil {
			return err
		}
		if len(line) != 0 {
			return errChunkCRLF
		}
		c.needCRLF = false
	}
	line, err := readLine(c.br)
	if err != nil {
		return err
	}
	size, err := parseChunkSize(line)
	if err != nil {
		return err
	}
	if size > 0 {
		c.left = size
		return nil
	}
	for range maxTrailerFields {
		line, err := readLine(c.br)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			c.done = true
			return nil
		}
		if c.trailers != nil {
			addTrailer(c.trailers, line)
		}
	}
	return errChunkTrailers
}

// readLine returns the next line without its line ending (CRLF, or a bare
// LF as RFC 9112 tolerates); the slice is valid until the next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// parseChunkSize parses "1*HEXDIG [ BWS ; ext ]".
func parseChunkSize(line []byte) (int64, error) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 {
		return 0, errChunkSize
	}
	var n int64
	for _, b := range line {
		var d byte
		switch {
		case '0' <= b && b <= '9':
			d = b - '0'
		case 'a' <= b && b <= 'f':
			d = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			d = b - 'A' + 10
		default:
			return 0, errChunkSize
		}
		if n >= maxChunkSize>>4 {
			return 0, errChunkSize
		}
		n = n<<4 | int64(d)
	}
	return n, nil
}
