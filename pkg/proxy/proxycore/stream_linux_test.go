//go:build linux

package proxycore

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"ebb.dev/ebb/internal/testnet"
	"ebb.dev/ebb/pkg/proxy/h2c"
)

// A stream whose dial timed out (the transport's DialTimeout, long before
// the stream's deadline: a SYN nobody answered) reached no upstream: it
// goes to the policy's next one, as a refused dial does, rather than
// failing as if the stream's deadline had passed.
func TestStreamRetriesAfterDialTimeout(t *testing.T) {
	app := h2App(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "answered") })
	p := &testStreams{targets: []string{testnet.BlackHole(t), app}}
	hop := NewStreamHop(StreamHopOptions{Transport: h2c.NewTransport(h2c.TransportOptions{DialTimeout: 200 * time.Millisecond}),
		WriteTimeout: 10 * time.Second})
	w := httptest.NewRecorder()
	s := hop.Begin(httptest.NewRequest(http.MethodGet, "http://x/", nil), StreamBounds{Start: time.Now(), Timeout: 10 * time.Second})
	hop.Forward(w, s, p)
	s.End()
	if w.Code != 200 || w.Body.String() != "answered" || p.next != 1 || len(p.failed) != 0 {
		t.Errorf("answer %d %q, next %d, failed %v; want the second target's 200 and no failure", w.Code, w.Body.String(), p.next, p.failed)
	}
}
