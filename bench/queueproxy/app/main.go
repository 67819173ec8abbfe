// Command app is the trivial app behind the queue-proxy in the load tests
// and the end-to-end test: "hello" on every path, an optional sleep, a
// streamed response on /stream, and a raw-echo upgrade on /upgrade.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	sleep := flag.Duration("sleep", 0, "time every request takes")
	flag.Parse()
	s := &fasthttp.Server{Handler: handler(*sleep), StreamRequestBody: true, NoDefaultServerHeader: true}
	if err := s.ListenAndServe(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

func handler(sleep time.Duration) fasthttp.RequestHandler {
	hello := []byte("hello\n")
	return func(ctx *fasthttp.RequestCtx) {
		if d, err := time.ParseDuration(string(ctx.QueryArgs().Peek("sleep"))); err == nil {
			time.Sleep(d)
		} else if sleep > 0 {
			time.Sleep(sleep)
		}
		switch string(ctx.Path()) {
		case "/stream":
			stream(ctx)
		case "/echo":
			n, _ := io.Copy(io.Discard, ctx.RequestBodyStream())
			ctx.SetBodyString(strconv.FormatInt(n, 10))
		case "/upgrade":
			upgrade(ctx)
		default:
			ctx.SetBody(hello)
		}
	}
}

// stream writes ?n= chunks of 1 KiB, one every ?every= (default 10ms).
func stream(ctx *fasthttp.RequestCtx) {
	n, _ := strconv.Atoi(string(ctx.QueryArgs().Peek("n")))
	every, err := time.ParseDuration(string(ctx.QueryArgs().Peek("every")))
	if err != nil {
		every = 10 * time.Millisecond
	}
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		chunk := make([]byte, 1024)
		for i := range n {
			chunk[0] = byte('a' + i%26)
			_, _ = w.Write(chunk)
			_ = w.Flush()
			time.Sleep(every)
		}
	})
}

func upgrade(ctx *fasthttp.RequestCtx) {
	ctx.SetStatusCode(fasthttp.StatusSwitchingProtocols)
	ctx.Response.Header.Set("Connection", "Upgrade")
	ctx.Response.Header.Set("Upgrade", "echo")
	ctx.Hijack(func(c net.Conn) { _, _ = io.Copy(c, c) })
}
