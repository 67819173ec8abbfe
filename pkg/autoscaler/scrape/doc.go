// Package scrape reads a queue-proxy's current stats over HTTP: GET
// http://ADDR/stats answers one encoded stats.Stat (pkg/stats wire format).
// It implements the autoscaler's Scraper with a keep-alive client and
// bounded reads; it holds no state of its own beyond the connection pool.
package scrape
