// Package promtest asks a Prometheus server's HTTP API for the end-to-end
// tests that run one (cmd/autoscaler and test/k8s).
package promtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

var client = &http.Client{Timeout: 5 * time.Second}

// Series evaluates the instant query q on the Prometheus at web (host:port)
// and returns how many series it gave.
func Series(web, q string) (int, error) {
	resp, err := client.Get("http://" + web + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s: %s", r.Status, r.Error)
	}
	return len(r.Data.Result), nil
}
