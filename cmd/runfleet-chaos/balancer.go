package main

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// balancer is the load balancer in front of the replicas for the
// machines' bootstrap calls and the operator's: each request to a replica
// that is up. It is the replicas' server.public_url, so a machine made by
// one replica reaches any other, as the README's deployment has it. A
// request cut by a kill is answered 502, which machines retry.
type balancer struct {
	url string
	srv *http.Server
}

// startBalancer listens on a free loopback port; pick names the base URL
// of a replica that is up ("" when none is).
func startBalancer(pick func() string) (*balancer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			base := pick()
			if base == "" {
				// Nothing up: a closed port, so the proxy answers 502.
				base = "http://127.0.0.1:1"
			}
			u, _ := url.Parse(base)
			pr.SetURL(u)
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	b := &balancer{
		url: "http://" + ln.Addr().String(),
		srv: &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second},
	}
	go func() { _ = b.srv.Serve(ln) }() // ends with close
	return b, nil
}

func (b *balancer) close() { _ = b.srv.Close() }
