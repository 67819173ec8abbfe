package autoscaler

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"ebb.dev/ebb/pkg/scaling/decider"
)

// recording writes the samples one revision's decider was fed as a scenario
// file: replayed by `autoscaler simulate`, it gives the same decisions. One
// recording covers one configuration; a new configuration starts a new file
// (the decider restarts then too). Owned by the revision's goroutine.
type recording struct {
	f         *os.File
	w         *bufio.Writer
	first     int64 // unix second of t = 0
	n         int   // samples written
	lastReady int32
	err       error // the first write error; later writes are skipped
}

// recordingHeader is the part of the scenario before the samples.
type recordingHeader struct {
	Description string            `json:"description"`
	Config      map[string]string `json:"config"`
	Annotations map[string]string `json:"annotations"`
	// StartInactive: the decider started inactive at zero (scenario.Scenario).
	StartInactive bool `json:"startInactive,omitempty"`
}

// newRecording creates DIR/NAMESPACE_NAME-SEQ.json and writes the header.
func newRecording(dir string, key RevisionKey, seq int, first int64, h recordingHeader) (*recording, error) {
	name := filepath.Join(dir, key.Namespace+"_"+key.Name+"-"+strconv.Itoa(seq)+".json")
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("creating recording: %w", err)
	}
	head, err := json.Marshal(h)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("encoding recording header: %w", err)
	}
	r := &recording{f: f, w: bufio.NewWriter(f), first: first, lastReady: -1}
	r.w.Write(head[:len(head)-1]) // reopen the object for "samples"
	r.w.WriteString(",\n\"samples\": [\n")
	return r, nil
}

// sample appends the second at unix second sec as the decider saw it.
// Seconds without a metric and without a change of ready are gaps.
func (r *recording) sample(sec int64, in decider.Second) {
	if r.err != nil {
		return
	}
	ready := int32(-1)
	if in.Ready != nil {
		ready = *in.Ready
	}
	readyChanged := ready >= 0 && ready != r.lastReady
	if !in.HasMetric && !readyChanged && in.Pods == nil {
		return
	}
	b := make([]byte, 0, 96)
	if r.n > 0 {
		b = append(b, ",\n"...)
	}
	b = append(b, `{"t": `...)
	b = strconv.AppendInt(b, sec-r.first, 10)
	if in.HasMetric {
		b = append(b, `, "concurrency": `...)
		b = strconv.AppendFloat(b, in.Concurrency, 'g', -1, 64)
		b = append(b, `, "rps": `...)
		b = strconv.AppendFloat(b, in.RPS, 'g', -1, 64)
	}
	if readyChanged {
		b = append(b, `, "ready": `...)
		b = strconv.AppendInt(b, int64(ready), 10)
		r.lastReady = ready
	}
	if in.Pods != nil {
		b = appendPods(b, in.Pods, time.Unix(r.first, 0))
	}
	b = append(b, '}')
	r.n++
	_, r.err = r.w.Write(b)
}

// close ends the JSON document and the file.
func (r *recording) close() error {
	if r.err == nil {
		_, r.err = r.w.WriteString("\n]}\n")
	}
	if err := r.w.Flush(); r.err == nil {
		r.err = err
	}
	if err := r.f.Close(); r.err == nil {
		r.err = err
	}
	return r.err
}

// appendPods writes the per-pod samples of the HPA class.
// Times are seconds relative to t = 0 (origin), as the samples' t.
func appendPods(b []byte, pods []decider.PodSample, origin time.Time) []byte {
	b = append(b, `, "pods": [`...)
	for i, p := range pods {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"name": `...)
		b = strconv.AppendQuote(b, p.Name)
		b = append(b, `, "ready": `...)
		b = strconv.AppendBool(b, p.Ready)
		b = appendPodState(b, &p, origin)
		for _, v := range []struct {
			key string
			v   *float64
		}{{"concurrency", p.Concurrency}, {"rps", p.RPS}, {"cpu", p.CPU}, {"memory", p.Memory}} {
			if v.v != nil {
				b = append(b, `, "`+v.key+`": `...)
				b = strconv.AppendFloat(b, *v.v, 'g', -1, 64)
			}
		}
		if p.Containers != nil {
			b = appendContainers(b, p.Containers)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendPodState writes what a PodStater platform gives beyond readiness:
// phase, deleting, and the start and Ready-transition times in seconds
// from origin (negative: before t = 0).
func appendPodState(b []byte, p *decider.PodSample, origin time.Time) []byte {
	if p.Phase != "" {
		b = append(b, `, "phase": `...)
		b = strconv.AppendQuote(b, p.Phase)
	}
	if p.Deleting {
		b = append(b, `, "deleting": true`...)
	}
	for _, t := range []struct {
		key string
		at  time.Time
	}{{"started", p.Started}, {"readySince", p.ReadySince}} {
		if !t.at.IsZero() {
			b = append(b, `, "`+t.key+`": `...)
			b = strconv.AppendFloat(b, t.at.Sub(origin).Seconds(), 'g', -1, 64)
		}
	}
	return b
}

// appendContainers writes the containers' usage and requests.
func appendContainers(b []byte, cs []decider.ContainerSample) []byte {
	b = append(b, `, "containers": [`...)
	for i, c := range cs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"name": `...)
		b = strconv.AppendQuote(b, c.Name)
		for _, v := range []struct {
			key string
			v   *float64
		}{{"cpu", c.CPU}, {"memory", c.Memory}, {"cpuRequest", &c.CPURequest}, {"memoryRequest", &c.MemoryRequest}} {
			if v.v != nil {
				b = append(b, `, "`+v.key+`": `...)
				b = strconv.AppendFloat(b, *v.v, 'g', -1, 64)
			}
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
