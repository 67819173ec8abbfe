package cluster

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/podfailure"
)

// StartFailure says whether the Deployment's pods cannot start, and why
// (podfailure.Classify on their container statuses and the
// Deployment's conditions, after prev: what the caller last got for it,
// nil for nothing). pods are those it selects, as PodTransform keeps them.
func StartFailure(prev *podfailure.Failure, d *appsv1.Deployment, pods []*corev1.Pod) (podfailure.Failure, bool) {
	conds := make([]podfailure.Condition, 0, len(d.Status.Conditions))
	for _, c := range d.Status.Conditions {
		conds = append(conds, podfailure.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return podfailure.Classify(prev, failurePods(pods), conds)
}

// StalledStart says whether the Deployment's pods were placed on nodes
// more than bound before now and none has started (podfailure.Stalled:
// a kubelet that does not answer, a node that is not ready, a long pull).
// recheck > 0 is when to look again without news (podfailure.Stalled).
func StalledStart(pods []*corev1.Pod, now time.Time, bound time.Duration) (f podfailure.Failure, stalled bool, recheck time.Duration) {
	return podfailure.Stalled(failurePods(pods), now, bound)
}

// Recovered says whether a revision whose pods failed with f has
// recovered (podfailure.Recovered: a ready pod of a new template, or one
// ready for settle); recheck > 0 is when to look again without news.
func Recovered(pods []*corev1.Pod, f podfailure.Failure, now time.Time, settle time.Duration) (ok bool, recheck time.Duration) {
	return podfailure.Recovered(failurePods(pods), f, now, settle)
}

// failurePods are the pods as podfailure reads them.
func failurePods(pods []*corev1.Pod) []podfailure.Pod {
	ps := make([]podfailure.Pod, 0, len(pods))
	for _, p := range pods {
		fp := podfailure.Pod{Name: p.Name, Ready: podCondition(p, corev1.PodReady), Deleting: p.DeletionTimestamp != nil, Node: p.Spec.NodeName,
			Template: p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]}
		for _, c := range p.Status.Conditions {
			switch {
			case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
				fp.Unschedulable = c.Message
			case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue:
				fp.ScheduledAt = c.LastTransitionTime.Time
			case c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse:
				fp.NotReadySince = c.LastTransitionTime.Time
			case c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue:
				fp.ReadySince = c.LastTransitionTime.Time
			}
		}
		fp.Containers = appendContainers(fp.Containers, p.Spec.InitContainers, p.Status.InitContainerStatuses, true)
		fp.Containers = appendContainers(fp.Containers, p.Spec.Containers, p.Status.ContainerStatuses, false)
		ps = append(ps, fp)
	}
	return ps
}

// appendContainers adds the statuses, each with the image its spec asked
// for (a status's own image is what the runtime resolved, or the same)
// and its memory limit.
func appendContainers(out []podfailure.Container, spec []corev1.Container, sts []corev1.ContainerStatus, init bool) []podfailure.Container {
	for _, s := range sts {
		c := podfailure.Container{Name: s.Name, Image: s.Image, Init: init, Ready: s.Ready, Restarts: s.RestartCount}
		for _, sc := range spec {
			if sc.Name == s.Name && sc.Image != "" {
				c.Image = sc.Image
			}
			if q, ok := sc.Resources.Limits[corev1.ResourceMemory]; ok && sc.Name == s.Name {
				c.MemoryLimit = q.String()
			}
		}
		if w := s.State.Waiting; w != nil {
			c.WaitingReason, c.WaitingMessage = w.Reason, w.Message
		}
		c.Ran = s.State.Running != nil || s.State.Terminated != nil
		if t := s.LastTerminationState.Terminated; t != nil {
			c.LastExitCode, c.LastReason, c.LastMessage = t.ExitCode, t.Reason, t.Message
			c.LastStartedAt, c.LastFinishedAt = t.StartedAt.Time, t.FinishedAt.Time
		}
		out = append(out, c)
	}
	return out
}

// keptImages are the containers' names, images and memory limits (nil
// for none).
func keptImages(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			out[i].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q}
		}
	}
	return out
}

// withImages is reqs (shared, read-only) with the images of imgs: a copy,
// with a container of its own for each image not among reqs.
func withImages(reqs, imgs []corev1.Container) []corev1.Container {
	out := make([]corev1.Container, 0, len(imgs))
	for _, c := range imgs {
		k := corev1.Container{Name: c.Name, Image: c.Image, Resources: corev1.ResourceRequirements{Limits: c.Resources.Limits}}
		for _, r := range reqs {
			if r.Name == c.Name {
				k.Resources.Requests = r.Resources.Requests
			}
		}
		out = append(out, k)
	}
	return out
}

// keptStatuses are the statuses' names, images, readiness, restarts,
// waiting state and last termination (nil for none).
func keptStatuses(sts []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(sts) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(sts))
	for i, s := range sts {
		out[i] = corev1.ContainerStatus{Name: s.Name, Image: s.Image, Ready: s.Ready, RestartCount: s.RestartCount,
			State: corev1.ContainerState{Waiting: s.State.Waiting}}
		if s.State.Running != nil { // that it runs, not since when
			out[i].State.Running = &corev1.ContainerStateRunning{}
		}
		if t := s.State.Terminated; t != nil {
			out[i].State.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason}
		}
		if t := s.LastTerminationState.Terminated; t != nil {
			out[i].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason, Message: t.Message,
				StartedAt: t.StartedAt, FinishedAt: t.FinishedAt}
		}
	}
	return out
}
