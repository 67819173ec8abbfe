//go:build k8s

package k8s

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// forwarder accepts on one address and splices each connection to
// another: the queue-proxy listens on all interfaces on the port it is
// given, so several pods' queue-proxies in one network namespace take
// distinct loopback ports, and a forwarder puts each on its pod's
// address.
type forwarder struct {
	ln    net.Listener
	dial  func() ([]string, error) // the targets, tried in order per connection
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func forward(listen string, dial func() ([]string, error)) (*forwarder, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	f := &forwarder{ln: ln, dial: dial, conns: map[net.Conn]struct{}{}}
	f.wg.Go(f.accept)
	return f, nil
}

func (f *forwarder) addr() string { return f.ln.Addr().String() }

func (f *forwarder) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Go(func() { f.splice(c) })
	}
}

func (f *forwarder) splice(c net.Conn) {
	defer c.Close()
	targets, err := f.dial()
	if err != nil {
		return
	}
	var u net.Conn
	for _, to := range targets {
		if u, err = net.DialTimeout("tcp", to, 2*time.Second); err == nil {
			break
		}
	}
	if u == nil {
		return
	}
	defer u.Close()
	if !f.track(c, u) {
		return
	}
	defer f.untrack(c, u)
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, u); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

func (f *forwarder) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		return false
	}
	for _, c := range cs {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *forwarder) untrack(cs ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		delete(f.conns, c)
	}
}

// upstreams are the addresses the open connections are forwarded to.
func (f *forwarder) upstreams() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for c := range f.conns {
		if c.LocalAddr().String() != f.ln.Addr().String() { // not a client's side
			out = append(out, c.RemoteAddr().String())
		}
	}
	return out
}

// close stops accepting at once (the address is free when it returns) and
// cuts the open connections, as a dead pod's would be.
func (f *forwarder) close() {
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
}

// serviceAddrs lists the ready addresses of a Service's EndpointSlices as
// host:port (the port named http, else the last), sorted by slice.
func serviceAddrs(ctx context.Context, c kubernetes.Interface, ns, svc string) ([]string, error) {
	return servicePortAddrs(ctx, c, ns, svc, "http")
}

// servicePortAddrs is serviceAddrs for the port of the given name (else
// the slice's last port).
func servicePortAddrs(ctx context.Context, c kubernetes.Interface, ns, svc, portName string) ([]string, error) {
	sls, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sl := range sls.Items {
		var port int32
		for _, p := range sl.Ports {
			if p.Port != nil {
				port = *p.Port
				if p.Name != nil && *p.Name == portName {
					break
				}
			}
		}
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				out = append(out, net.JoinHostPort(a, itoa(int(port))))
			}
		}
	}
	return out, nil
}

// serviceProxy plays kube-proxy for one port of a Service: each
// connection goes to the Service's first ready endpoint at the time that
// accepts it. kwok never marks a pod unready, so a crashed replica stays
// an endpoint; trying the next one plays the readiness probe that would
// take it out.
func serviceProxy(c kubernetes.Interface, ns, svc, port string) (*forwarder, error) {
	return forward("127.0.0.1:0", func() ([]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		addrs, err := servicePortAddrs(ctx, c, ns, svc, port)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, errors.New("no endpoint")
		}
		return addrs, nil
	})
}
