// Command baseline is the yardstick of the queue-proxy load test: the
// smallest useful fasthttp reverse proxy, HostClient.Do from the server's
// request straight into its response, nothing else.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/valyala/fasthttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8013", "address to serve on")
	upstream := flag.String("upstream", "127.0.0.1:8080", "address of the app")
	flag.Parse()

	hc := &fasthttp.HostClient{Addr: *upstream, MaxConns: 4096}
	s := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			ctx.Request.Header.Del("Connection")
			if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
				ctx.Error("baseline: "+err.Error(), fasthttp.StatusBadGateway)
			}
		},
	}
	if err := s.ListenAndServe(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}
