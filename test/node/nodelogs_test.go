//go:build node

package node

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// nodeStart is where a pod's start went on the node, from the kubelet's
// and containerd's own log timestamps (µs): the kubelet's first line for
// the pod (volumes) to containerd's RunPodSandbox, the sandbox (the pause
// container's shim and runc, the CNI bridge), and the containers (created
// and started one after the other: app, then queue-proxy).
type nodeStart struct {
	kubelet, sandbox, containers time.Duration
	ok                           bool
}

var (
	containerdTime = regexp.MustCompile(`^time="([^"]+)"`)
	sandboxID      = regexp.MustCompile(`returns sandbox id \\"([0-9a-f]+)\\"`)
	containerID    = regexp.MustCompile(`returns container id \\"([0-9a-f]+)\\"`)
)

// nodeStartOf reads the testbed's kubelet and containerd logs
// ($EBB_TESTBED_RUN_DIR/logs) for the pod's start; ok is false when they
// do not tell.
func nodeStartOf(pod string, day time.Time) nodeStart {
	logs := filepath.Join(os.Getenv("EBB_TESTBED_RUN_DIR"), "logs")
	var ns nodeStart
	kubeletFirst := firstKubeletLine(filepath.Join(logs, "kubelet.log"), pod, day)
	b, err := os.ReadFile(filepath.Join(logs, "containerd.log"))
	if err != nil || kubeletFirst.IsZero() {
		return ns
	}
	var sbStart, sbDone, ctrStart, ctrDone time.Time
	sb := ""
	ids := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		m := containerdTime.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			continue
		}
		switch {
		case sb == "" && strings.Contains(line, "RunPodSandbox for &PodSandboxMetadata{Name:"+pod+","):
			if id := sandboxID.FindStringSubmatch(line); id != nil {
				sb, sbDone = id[1], at
			} else {
				sbStart = at
			}
		case sb != "" && strings.Contains(line, "CreateContainer within sandbox \\\""+sb+"\\\""):
			if ctrStart.IsZero() {
				ctrStart = at
			}
			if id := containerID.FindStringSubmatch(line); id != nil {
				ids[id[1]] = true
			}
		case sb != "" && strings.Contains(line, "StartContainer for") && strings.Contains(line, "returns successfully"):
			for id := range ids {
				if strings.Contains(line, id) {
					ctrDone = at
				}
			}
		}
	}
	if sbStart.IsZero() || sbDone.IsZero() || ctrStart.IsZero() || ctrDone.IsZero() || len(ids) == 0 {
		return ns
	}
	return nodeStart{kubelet: sbStart.Sub(kubeletFirst), sandbox: sbDone.Sub(sbStart), containers: ctrDone.Sub(ctrStart), ok: true}
}

// firstKubeletLine is the time of the kubelet's first log line naming the
// pod (klog's header has no year: day gives the date, in UTC).
func firstKubeletLine(path, pod string, day time.Time) time.Time {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if len(line) < 21 || !strings.Contains(line, pod) {
			continue
		}
		// I1128 20:11:11.569795 ...
		t, err := time.Parse("0102 15:04:05.000000", line[1:21])
		if err != nil {
			continue
		}
		d := day.UTC()
		return time.Date(d.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	}
	return time.Time{}
}
