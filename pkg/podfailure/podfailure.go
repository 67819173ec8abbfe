package podfailure

import (
	"fmt"
	"strings"
)

// Pod is one pod of a revision as the kubelet reports it.
type Pod struct {
	Name     string
	Ready    bool // the Ready condition is True
	Deleting bool // it has a deletion timestamp
	// Unschedulable is the scheduler's message while the pod cannot be
	// placed (PodScheduled False, reason Unschedulable); "" otherwise.
	Unschedulable string
	// Containers are the init containers' statuses, then the containers'.
	Containers []Container
}

// Container is one container's status.
type Container struct {
	Name  string
	Image string // the image the pod asked for (the spec's reference)
	Init  bool
	Ready bool
	// WaitingReason and WaitingMessage are the kubelet's while the
	// container waits ("" when it runs or ended).
	WaitingReason, WaitingMessage string
	Restarts                      int32
	// LastExitCode, LastReason and LastMessage are its last termination's
	// (LastReason "" when it never ended).
	LastExitCode            int32
	LastReason, LastMessage string
}

// Condition is one of the Deployment's conditions.
type Condition struct {
	Type, Status, Reason, Message string
}

// Failure is why a revision's pods cannot start.
type Failure struct {
	// Reason is Ebb's machine-readable name of the failure: one of the
	// Reason* constants.
	Reason string `json:"reason"`
	// Cause is Kubernetes' own reason (ErrImagePull, CrashLoopBackOff,
	// FailedCreate, ProgressDeadlineExceeded, ...).
	Cause string `json:"cause,omitempty"`
	// Pod and Container name where it was seen ("" for the Deployment's
	// conditions).
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	// Message says what fails, why (the kubelet's or the controller's own
	// words, cut to MaxDetail bytes) and how to fix it.
	Message string `json:"message"`
	// Pending is set for a failure that may pass by itself (a pod the
	// scheduler cannot place yet: a node may be added). It is reported at
	// once, but requests keep waiting for the revision (up to their
	// timeout); the Deployment's ProgressDeadlineExceeded ends Pending
	// (Kubernetes judges that deadline during a rollout, not when a
	// Deployment is only scaled).
	Pending bool `json:"pending,omitempty"`
}

// The failures' reasons.
const (
	ReasonImagePullFailed      = "ImagePullFailed"
	ReasonContainerCrashing    = "ContainerCrashing"
	ReasonContainerConfigError = "ContainerConfigError"
	ReasonContainerCannotStart = "ContainerCannotStart"
	ReasonPodsNotCreated       = "PodsNotCreated"
	ReasonProgressDeadline     = "ProgressDeadlineExceeded"
	ReasonUnschedulable        = "Unschedulable"
	conditionReplicaFailure    = "ReplicaFailure"
	conditionProgressing       = "Progressing"
	causeProgressDeadline      = "ProgressDeadlineExceeded"
	causeCrashLoop             = "CrashLoopBackOff"
	imageFix                   = "check the image reference, and that the nodes can pull it (the registry is reachable, imagePullSecrets), " +
		"or load the image onto the nodes"
	crashFix    = "read its log (kubectl logs POD -c CONTAINER --previous) and fix the app, its command, arguments or environment"
	configFix   = "create the Secrets and ConfigMaps the pod template refers to, or fix the references"
	startFix    = "see kubectl describe pod POD"
	podsFix     = "see kubectl describe replicaset of the Deployment (a quota, a LimitRange or an admission webhook may refuse the pods)"
	progressFix = "see kubectl describe deployment and its pods (a pod that cannot be scheduled, or never becomes ready)"
	scheduleFix = "lower the pod's resource requests, fix its nodeSelector, affinity or tolerations, or add nodes"
)

// MaxDetail bounds the kubelet's or controller's message quoted in a
// Failure's Message (a pull error can be several hundred bytes).
const MaxDetail = 300

// waiting maps a container's waiting reason that means it cannot start
// (it will not start by waiting longer) to Ebb's reason.
var waiting = map[string]string{
	"ErrImagePull":               ReasonImagePullFailed,
	"ImagePullBackOff":           ReasonImagePullFailed,
	"InvalidImageName":           ReasonImagePullFailed,
	"ErrImageNeverPull":          ReasonImagePullFailed,
	"RegistryUnavailable":        ReasonImagePullFailed,
	"SignatureValidationFailed":  ReasonImagePullFailed,
	causeCrashLoop:               ReasonContainerCrashing,
	"CreateContainerConfigError": ReasonContainerConfigError,
	"CreateContainerError":       ReasonContainerCannotStart,
	"RunContainerError":          ReasonContainerCannotStart,
	"PreStartHookError":          ReasonContainerCannotStart,
	"PostStartHookError":         ReasonContainerCannotStart,
}

// Classify says whether the revision whose pods and Deployment conditions
// these are cannot start. It is failing when no pod is ready and either
//   - every pod that is not being deleted has a container that cannot
//     start (a waiting reason of the table above, or a restarted container
//     whose last run failed and which is not ready): a pod still starting
//     normally (pulling, creating, probing) means a fix may be rolling out,
//     so the revision is given its chance; or
//   - the Deployment says so: ReplicaFailure (pods cannot be created)
//     while no pod starts, or Progressing False with
//     ProgressDeadlineExceeded (no pod became ready within its
//     progressDeadlineSeconds).
//
// A pod the scheduler cannot place counts as failing, Pending (it may be
// placed once a node is added), until the progress deadline.
//
// Of several failing pods the first by name is reported (one that cannot
// start before one that waits for a node), so the answer does not depend
// on the order of the list.
func Classify(pods []Pod, conds []Condition) (Failure, bool) {
	var first *Failure
	starting := false
	for i := range pods {
		p := &pods[i]
		if p.Deleting {
			continue
		}
		if p.Ready {
			return Failure{}, false
		}
		f, ok := podFailure(p)
		if !ok {
			starting = true
			continue
		}
		if first == nil || first.Pending && !f.Pending || first.Pending == f.Pending && f.Pod < first.Pod {
			first = &f
		}
	}
	if c, ok := find(conds, conditionProgressing); ok && c.Status == "False" && c.Reason == causeProgressDeadline {
		if first != nil && !starting {
			f := *first
			if f.Pending { // the deadline ends the wait for a node
				f.Pending = false
				f.Message = fmt.Sprintf("pod %s stayed unschedulable past the Deployment's progress deadline: %s", f.Pod, f.Message)
			}
			return f, true
		}
		return Failure{Reason: ReasonProgressDeadline, Cause: c.Reason,
			Message: fmt.Sprintf("no pod became ready within the Deployment's progress deadline: %s; %s", detail(c.Message), progressFix)}, true
	}
	if starting {
		return Failure{}, false
	}
	if first != nil {
		return *first, true
	}
	if c, ok := find(conds, conditionReplicaFailure); ok && c.Status == "True" {
		return Failure{Reason: ReasonPodsNotCreated, Cause: c.Reason,
			Message: fmt.Sprintf("its pods cannot be created: %s: %s; %s", c.Reason, detail(c.Message), podsFix)}, true
	}
	return Failure{}, false
}

// podFailure is the first container of p that cannot start (init
// containers first: the others wait for them), else p itself when the
// scheduler cannot place it (Pending).
func podFailure(p *Pod) (Failure, bool) {
	if f, ok := containersFailure(p); ok {
		return f, true
	}
	if p.Unschedulable != "" {
		return Failure{Reason: ReasonUnschedulable, Cause: ReasonUnschedulable, Pod: p.Name, Pending: true,
			Message: fmt.Sprintf("pod %s cannot be scheduled: %s; %s (a cluster autoscaler may be adding one: requests wait for it)",
				p.Name, detail(p.Unschedulable), scheduleFix)}, true
	}
	return Failure{}, false
}

func containersFailure(p *Pod) (Failure, bool) {
	for _, c := range p.Containers {
		if c.Ready {
			continue
		}
		if r, ok := waiting[c.WaitingReason]; ok {
			return containerFailure(p.Name, &c, r), true
		}
		if c.WaitingReason == "" && c.Restarts > 0 && c.LastReason != "" && c.LastExitCode != 0 {
			return containerFailure(p.Name, &c, ReasonContainerCrashing), true // between two crashes
		}
	}
	return Failure{}, false
}

func containerFailure(pod string, c *Container, reason string) Failure {
	f := Failure{Reason: reason, Cause: c.WaitingReason, Pod: pod, Container: c.Name}
	kind := "container"
	if c.Init {
		kind = "init container"
	}
	fix := func(s string) string {
		return strings.NewReplacer("POD", pod, "CONTAINER", c.Name).Replace(s)
	}
	switch reason {
	case ReasonImagePullFailed:
		f.Message = fmt.Sprintf("image %s (%s %s) cannot be pulled: %s: %s; %s", c.Image, kind, c.Name, c.WaitingReason,
			detail(c.WaitingMessage), imageFix)
	case ReasonContainerCrashing:
		if f.Cause == "" {
			f.Cause = causeCrashLoop
		}
		times := "times"
		if c.Restarts == 1 {
			times = "time"
		}
		f.Message = fmt.Sprintf("%s %s (image %s) exits at start: exit code %d (%s), restarted %d %s%s; %s", kind, c.Name, c.Image,
			c.LastExitCode, c.LastReason, c.Restarts, times, colon(c.LastMessage), fix(crashFix))
	case ReasonContainerConfigError:
		f.Message = fmt.Sprintf("%s %s cannot be created: %s: %s; %s", kind, c.Name, c.WaitingReason, detail(c.WaitingMessage), configFix)
	default:
		f.Message = fmt.Sprintf("%s %s (image %s) cannot start: %s: %s; %s", kind, c.Name, c.Image, c.WaitingReason,
			detail(c.WaitingMessage), fix(startFix))
	}
	return f
}

// colon is ": " and the detail, or nothing for an empty one.
func colon(s string) string {
	if s = detail(s); s == "" {
		return ""
	}
	return ": " + s
}

// detail is a message from Kubernetes on one line, cut to MaxDetail bytes.
func detail(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > MaxDetail {
		s = strings.ToValidUTF8(s[:MaxDetail], "") + "..."
	}
	return s
}

func find(conds []Condition, typ string) (Condition, bool) {
	for _, c := range conds {
		if c.Type == typ {
			return c, true
		}
	}
	return Condition{}, false
}
