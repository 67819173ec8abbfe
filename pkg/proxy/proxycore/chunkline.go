package proxycore

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"unsafe"

	"github.com/valyala/fasthttp"
)

// The length of one chunk size line. net/http refuses a chunked body one
// of whose size lines (extensions and CRLF included) is longer than its
// reader's buffer, 4 KiB (net/http/internal's readChunkLine, "header line
// too long"). The budget of chunkext.go cannot see one line: it measures
// around fasthttp's 8 KiB read buffer, and fasthttp's parser skips an
// extension byte by byte however long it is. So, before each read of a
// size line, the line is looked for in the buffer fasthttp's stream reads
// from (Peek: nothing is consumed), reading more from the connection as
// the parser would, and a line that does not end within maxChunkLine
// bytes fails the body: 400, and the connection closed.
//
// fasthttp (pinned at v1.74.0) exports neither its chunked request stream
// nor the reader under it. Its unexported fields are found once, by name
// and type, on a stream made at start (streamFields); if they are not
// there (another fasthttp), the line is not checked and
// TestChunkLineLimit fails.

// maxChunkLine bounds a chunk size line, its extensions and CRLF
// included: net/http's.
const maxChunkLine = 4 << 10

// errChunkLine: a chunk size line longer than net/http allows.
var errChunkLine = errors.New("chunked body: a chunk size line (with its extensions) is longer than 4 KiB; send shorter chunk extensions")

// streamLayout is where fasthttp's chunked request stream keeps its
// reader, the data left in the chunk being read, and its end.
type streamLayout struct {
	typ                 reflect.Type // *fasthttp.requestStream
	reader, left, ended uintptr      // field offsets
}

var streamFields = findStreamLayout()

// findStreamLayout finds the fields on a chunked request stream of this
// fasthttp; the zero layout if they are not as expected.
func findStreamLayout() streamLayout {
	var req fasthttp.Request
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentLength(-1) // chunked
	if err := req.ContinueReadBodyStream(bufio.NewReader(strings.NewReader("")), 1, false); err != nil {
		return streamLayout{}
	}
	defer func() { _ = req.CloseBodyStream() }()
	t := reflect.TypeOf(req.BodyStream())
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return streamLayout{}
	}
	field := func(name string, want reflect.Type) (uintptr, bool) {
		f, ok := t.Elem().FieldByName(name)
		return f.Offset, ok && f.Type == want
	}
	reader, ok1 := field("reader", reflect.TypeFor[*bufio.Reader]())
	left, ok2 := field("chunkLeft", reflect.TypeFor[int]())
	ended, ok3 := field("eof", reflect.TypeFor[bool]())
	if !ok1 || !ok2 || !ok3 {
		return streamLayout{}
	}
	return streamLayout{typ: t, reader: reader, left: left, ended: ended}
}

// chunkLines checks the size lines of one fasthttp chunked stream. The
// zero value checks nothing.
type chunkLines struct {
	stream unsafe.Pointer // the *fasthttp.requestStream
}

// linesOf returns the checker of r's size lines: none unless r is
// fasthttp's chunked stream with the layout found at start.
func linesOf(r io.Reader) chunkLines {
	if streamFields.typ == nil || reflect.TypeOf(r) != streamFields.typ {
		return chunkLines{}
	}
	return chunkLines{stream: reflect.ValueOf(r).UnsafePointer()}
}

// check runs before a read of the stream: when that read begins with a
// size line (no data left in the chunk, the body not ended), the line must
// end within maxChunkLine bytes. A failure to read more is left to the
// stream's own read, which meets it again and reports it as fasthttp does.
func (l chunkLines) check() error {
	if l.stream == nil {
		return nil
	}
	left := *(*int)(unsafe.Add(l.stream, streamFields.left))
	ended := *(*bool)(unsafe.Add(l.stream, streamFields.ended))
	br := *(**bufio.Reader)(unsafe.Add(l.stream, streamFields.reader))
	if left != 0 || ended || br == nil {
		return nil
	}
	for {
		buf, _ := br.Peek(br.Buffered())
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			if i >= maxChunkLine {
				return errChunkLine
			}
			return nil
		}
		if len(buf) >= maxChunkLine {
			return errChunkLine
		}
		if _, err := br.Peek(len(buf) + 1); err != nil {
			return nil
		}
	}
}
