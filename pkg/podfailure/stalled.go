package podfailure

import (
	"fmt"
	"time"
)

// Stalled says whether a revision waiting for its first pod waits on a
// node that does not start it: no pod is ready, and every pod that is not
// being deleted was placed on a node more than bound before now and none
// of its containers has ever run (no status at all, or waiting to be
// created: a kubelet that does not answer, a node that is not ready, or
// an image still being pulled). Such a failure is Pending: it may pass by
// itself, so requests keep waiting (up to their timeout) while it is
// reported. A pod not placed yet, or with a container that ran, is not
// stalled (Classify judges those). The first pod by name is reported.
//
// recheck, when > 0, is how long after now the answer may change with no
// news from the cluster (a placed pod reaches the bound): a kubelet that
// does not answer sends none, so the caller looks again then.
func Stalled(pods []Pod, now time.Time, bound time.Duration) (f Failure, stalled bool, recheck time.Duration) {
	var first *Pod
	waiting := false
	for i := range pods {
		p := &pods[i]
		if p.Deleting {
			continue
		}
		if p.Ready || p.ScheduledAt.IsZero() || anyStarted(p) {
			return Failure{}, false, 0
		}
		if left := p.ScheduledAt.Add(bound).Sub(now); left >= 0 {
			if !waiting || left+time.Millisecond < recheck {
				recheck = left + time.Millisecond
			}
			waiting = true
			continue
		}
		if first == nil || p.Name < first.Name {
			first = p
		}
	}
	if waiting || first == nil {
		return Failure{}, false, recheck
	}
	return stalledFailure(first, now), true, 0
}

func stalledFailure(p *Pod, now time.Time) Failure {
	waiting := "no container status reported"
	for _, c := range p.Containers {
		if c.WaitingReason != "" {
			waiting = "waiting: " + c.WaitingReason
			break
		}
	}
	return Failure{Reason: ReasonPodNotStarting, Cause: ReasonPodNotStarting, Pod: p.Name, Pending: true,
		Message: fmt.Sprintf("pod %s was placed on node %s %s ago and none of its containers has started (%s): an image still "+
			"being pulled, or a node that is not ready or whose kubelet does not answer; see kubectl describe pod %s and "+
			"kubectl describe node %s (requests wait for it)", p.Name, p.Node, now.Sub(p.ScheduledAt).Round(time.Second),
			waiting, p.Name, p.Node)}
}

// anyStarted reports whether a container of p has run (runs, ran, or
// waits after a run).
func anyStarted(p *Pod) bool {
	for _, c := range p.Containers {
		if c.Ran || c.Ready || c.Restarts > 0 || c.LastReason != "" {
			return true
		}
	}
	return false
}
