package testnet

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Preface is the HTTP/2 client connection preface (RFC 9113 §3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// H2CUpgrade sends upgrade (an HTTP/1.1 request with "Upgrade: h2c") on
// c, expects a 101, speaks HTTP/2 and returns the :status and body of
// stream 1, the upgraded request. c should have a deadline.
func H2CUpgrade(t testing.TB, c net.Conn, upgrade string) (status, body string) {
	t.Helper()
	if _, err := io.WriteString(c, upgrade); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var head strings.Builder
	for {
		line, err := br.ReadString('\n')
		head.WriteString(line)
		if err != nil {
			t.Fatalf("reading the answer to the upgrade: %v (%q)", err, head.String())
		}
		if line == "\r\n" {
			break
		}
	}
	if !strings.HasPrefix(head.String(), "HTTP/1.1 101 ") {
		t.Fatalf("answer to the upgrade: %q, want a 101", head.String())
	}
	if _, err := io.WriteString(c, h2Preface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, br)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var data bytes.Buffer
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.Name == ":status" {
			status = f.Value
		}
	})
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading frames: %v (so far: status %q, body %q)", err, status, data.String())
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			if _, err := dec.Write(f.HeaderBlockFragment()); err != nil {
				t.Fatal(err)
			}
			if f.StreamID == 1 && f.StreamEnded() {
				return status, data.String()
			}
		case *http2.DataFrame:
			data.Write(f.Data())
			if f.StreamID == 1 && f.StreamEnded() {
				return status, data.String()
			}
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v", f.ErrCode)
		}
	}
}
