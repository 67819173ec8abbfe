// Command baseline is the bare h2c reverse proxy make bench-grpc measures
// the queue-proxy against: net/http's HTTP/2 server (prior knowledge) and
// httputil.ReverseProxy over an h2c transport, the same HTTP/2 library
// the queue-proxy uses, with nothing else on the path.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18201", "address to serve h2c on")
	upstream := flag.String("upstream", "127.0.0.1:18200", "the h2c app")
	flag.Parse()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	target := &url.URL{Scheme: "http", Host: *upstream}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target); pr.Out.Host = pr.In.Host },
		Transport:     &http.Transport{Protocols: &p, DialContext: (&net.Dialer{}).DialContext},
		FlushInterval: -1,
	}
	srv := &http.Server{Addr: *listen, Handler: rp, Protocols: &p}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}
