package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestLoggerFormats: JSON lines with Knative's keys when stderr is not a
// terminal (auto) or on request; the console encoder on request; the
// level applies; a bad format or level is named.
func TestLoggerFormats(t *testing.T) {
	for _, format := range []string{"auto", "json"} {
		var buf bytes.Buffer
		log, err := newLogger("info", format, streams{err: &buf})
		if err != nil {
			t.Fatal(err)
		}
		log.Debug("hidden")
		log.Info("ebb is running", zap.String("api", "http://127.0.0.1:9091"))
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("%s: %q is not one JSON line: %v", format, buf.String(), err)
		}
		for k, want := range map[string]any{"severity": "info", "message": "ebb is running", "api": "http://127.0.0.1:9091"} {
			if line[k] != want {
				t.Errorf("%s: %s = %v, want %v (line %s)", format, k, line[k], want, buf.String())
			}
		}
		if _, ok := line["timestamp"].(string); !ok {
			t.Errorf("%s: no ISO 8601 timestamp in %s", format, buf.String())
		}
	}
	var buf bytes.Buffer
	log, err := newLogger("debug", "console", streams{err: &buf})
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("shown")
	if !strings.Contains(buf.String(), "DEBUG\tshown") {
		t.Errorf("console: %q, want a DEBUG line", buf.String())
	}
	if _, err := newLogger("info", "xml", streams{err: &buf}); err == nil || !strings.Contains(err.Error(), "--log-format \"xml\"") {
		t.Errorf("format xml: %v, want an error naming it", err)
	}
	if _, err := newLogger("loud", "json", streams{err: &buf}); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("level loud: %v, want an error naming it", err)
	}
}
