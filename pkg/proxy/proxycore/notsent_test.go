package proxycore

import (
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// refusingHop is a hop of the proxy's own whose app refused the
// connection: it answers 503 with the not-sent field set to value, and
// reads nothing of the body. It counts its answers.
func refusingHop(value string, answered *int) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		*answered++
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.SetBodyString("the app refused the connection")
		ctx.Response.Header.Set("Ebb-Not-Sent", value)
	}
}

// TestNotSentIsSentAgain: an answer proving the next hop did not pass the
// request on is never the client's: the request goes to the next
// upstream whatever its method, when its body is in memory; a streamed
// body is not sent again (the client gets the proxy's error). A field
// without the proof, or with a wrong one, is an ordinary answer, the
// field removed; the field never reaches a client.
func TestNotSentIsSentAgain(t *testing.T) {
	mark := NotSentMark{Name: []byte("Ebb-Not-Sent"), Value: []byte("proof-0123456789")}
	tests := []struct {
		name      string
		hopValue  string
		mark      NotSentMark
		build     func(*fasthttp.Request)
		wantCode  int
		wantRuns  string
		wantInHop bool // the body names the refusing hop's answer
	}{
		{name: "POST in memory goes to the next", hopValue: "proof-0123456789", mark: mark, build: post, wantCode: 200,
			wantRuns: "POST / 14"},
		{name: "GET goes to the next", hopValue: "proof-0123456789", mark: mark, build: get, wantCode: 200, wantRuns: "GET / 0"},
		{name: "a streamed POST is not sent again", hopValue: "proof-0123456789", mark: mark, build: bigPost, wantCode: 502},
		{name: "a forged proof is an answer", hopValue: "true", mark: mark, build: post, wantCode: 503, wantInHop: true},
		{name: "nothing trusted without a value", hopValue: "proof-0123456789", mark: NotSentMark{Name: mark.Name}, build: post,
			wantCode: 503, wantInHop: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answered := 0
			hop := startApp(t, refusingHop(tt.hopValue, &answered), nil)
			l := &ledgerApp{}
			app := startApp(t, l.handle, nil)
			p := newTestProxy(t, proxyOptions{retries: 1, notSent: tt.mark, apps: []func() (net.Conn, error){hop, app}})
			code, body, resp := p.do(t, tt.build)
			if code != tt.wantCode || l.executed() != tt.wantRuns || answered != 1 {
				t.Errorf("got %d %q, the app ran %q, the hop answered %d; want %d, %q, 1", code, body, l.executed(), answered,
					tt.wantCode, tt.wantRuns)
			}
			if v := resp.Header.Peek("Ebb-Not-Sent"); v != nil {
				t.Errorf("the not-sent field reached the client: %q", v)
			}
			if got := strings.Contains(body, "the app refused the connection"); got != tt.wantInHop {
				t.Errorf("body %q: the hop's own answer passed on = %v, want %v", body, got, tt.wantInHop)
			}
		})
	}
}

// bigPost is a POST whose body the testProxy streams (larger than it
// reads whole).
func bigPost(r *fasthttp.Request) {
	r.Header.SetMethod("POST")
	r.SetBodyString(strings.Repeat("b", maxTestBuffer+1))
}
