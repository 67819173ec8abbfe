package scrape

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/stats"
)

// Client scrapes queue-proxies. Safe for concurrent use.
type Client struct {
	http *http.Client
}

// New returns a client with a keep-alive pool sized for many pods.
func New() *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &Client{http: &http.Client{Transport: tr}}
}

// Scrape reads one pod's current Stat. The context bounds the request.
func (c *Client) Scrape(ctx context.Context, pod autoscaler.Pod) (stats.Stat, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pod.StatsAddr+stats.Path, nil)
	if err != nil {
		return stats.Stat{}, fmt.Errorf("scraping pod %s: %w", pod.Name, err)
	}
	req.Header.Set("Accept", stats.ContentType)
	resp, err := c.http.Do(req)
	if err != nil {
		return stats.Stat{}, fmt.Errorf("scraping pod %s: %w", pod.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, stats.MaxWireLen+1))
	if err != nil {
		return stats.Stat{}, fmt.Errorf("scraping pod %s: reading: %w", pod.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return stats.Stat{}, fmt.Errorf("scraping pod %s: status %d", pod.Name, resp.StatusCode)
	}
	var st stats.Stat
	if err := st.UnmarshalBinary(body); err != nil {
		return stats.Stat{}, fmt.Errorf("scraping pod %s: %w", pod.Name, err)
	}
	return st, nil
}

// Close drops idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }
