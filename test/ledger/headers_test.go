package ledger

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// exchangeRaw writes raw (one or more requests) on a new connection to
// addr and reads n answers; it returns their statuses and bodies.
func exchangeRaw(t *testing.T, addr, raw string, n int) (statuses []int, bodies []string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(requestTimeout))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i := range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("answer %d's body: %v", i, err)
		}
		statuses, bodies = append(statuses, resp.StatusCode), append(bodies, string(b))
	}
	return statuses, bodies
}

// executed returns the app's executions of id.
func executed(a *app, id string) []execution {
	var out []execution
	for _, e := range a.ledger() {
		if e.ID == id {
			out = append(out, e)
		}
	}
	return out
}

// TestRefusedUpgradeStaysHTTP: an upgrade request the app answers 200 (not
// 101) is an ordinary exchange, and the client's connection stays
// HTTP/1.1: the request pipelined behind it is parsed and proxied as a
// request (the proxy adds its X-Forwarded-For), through each route.
// Before, the activator spliced the connection to the replica on any
// answer, and every later request on it went through raw: unrouted,
// uncounted, without X-Forwarded-For.
func TestRefusedUpgradeStaysHTTP(t *testing.T) {
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			t.Parallel()
			a := startApp(t, faults{})
			d := front(t, r, a.addr)
			raw := "GET /ledger/up-1 HTTP/1.1\r\nHost: " + host + "\r\n" + idHeader + ": up-1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n" +
				"GET /ledger/up-2 HTTP/1.1\r\nHost: " + host + "\r\n" + idHeader + ": up-2\r\n\r\n"
			statuses, bodies := exchangeRaw(t, d.addr, raw, 2)
			if statuses[0] != 200 || bodies[0] != "ok up-1" || statuses[1] != 200 || bodies[1] != "ok up-2" {
				t.Fatalf("answers %v %q, want 200 \"ok up-1\" then 200 \"ok up-2\"", statuses, bodies)
			}
			for _, id := range []string{"up-1", "up-2"} {
				execs := executed(a, id)
				if len(execs) != 1 || len(execs[0].XFF) != 1 || !strings.HasSuffix(execs[0].XFF[0], "127.0.0.1") {
					t.Errorf("%s: executions %+v, want one, with the X-Forwarded-For the proxy adds", id, execs)
				}
			}
		})
	}
}
