package podfailure

import (
	"fmt"
	"strings"
	"time"
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
	// NotReadySince is when its Ready condition last became False (zero:
	// unknown, or it is ready). A container whose last run started before
	// then was running while the pod was ready: it crashed after serving.
	NotReadySince time.Time
	// ReadySince is when its Ready condition last became True (zero:
	// unknown, or it is not ready).
	ReadySince time.Time
	// Node is the node it was placed on, and ScheduledAt when (its
	// PodScheduled condition became True; zero: not placed yet).
	Node        string
	ScheduledAt time.Time
	// Template names the pod template it was made from (the
	// Deployment's pod-template-hash label; "" unknown): Classify
	// remembers a crash after serving for the pods of one template.
	Template string
	// served: an earlier run of this template's container crashed after
	// serving (Classify sets it).
	served string
	// oomBefore: an earlier run of this template's container was killed
	// for its memory (Classify sets it).
	oomBefore string
}

// Container is one container's status.
type Container struct {
	Name  string
	Image string // the image the pod asked for (the spec's reference)
	Init  bool
	Ready bool
	// Ran is set when it runs or ended (the kubelet's State.Running or
	// State.Terminated: an init container that completed included).
	Ran bool
	// WaitingReason and WaitingMessage are the kubelet's while the
	// container waits ("" when it runs or ended).
	WaitingReason, WaitingMessage string
	Restarts                      int32
	// LastExitCode, LastReason and LastMessage are its last termination's
	// (LastReason "" when it never ended); LastStartedAt and
	// LastFinishedAt bound that run (zero: unknown).
	LastExitCode                  int32
	LastReason, LastMessage       string
	LastStartedAt, LastFinishedAt time.Time
	// MemoryLimit is the spec's resources.limits.memory ("" for none).
	MemoryLimit string
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
	// Template is the pod template of the pod it was seen on ("" for
	// none): Classify keeps a crash after serving for its pods.
	Template string `json:"-"`
}

// Summary is the failure in a few words, for the line that then gives
// its Message: "pods cannot start" (the Pending ones "pods cannot start
// yet"), or "pods keep failing" for containers that started, served and
// then died (crashed, or killed for their memory).
func (f Failure) Summary() string {
	switch {
	case f.AfterStart():
		return "pods keep failing"
	case f.Pending:
		return "pods cannot start yet"
	}
	return "pods cannot start"
}

// AfterStart reports whether the pods started and then failed (a crash
// after serving, a kill for memory), rather than never started.
func (f Failure) AfterStart() bool {
	return f.Reason == ReasonContainerCrashedAfterStart || f.Reason == ReasonContainerOOMKilled
}

// The failures' reasons.
const (
	ReasonImagePullFailed   = "ImagePullFailed"
	ReasonContainerCrashing = "ContainerCrashing"
	// ReasonContainerCrashedAfterStart: it exited after its pod had been
	// ready (it served, then died: under load, or over time).
	ReasonContainerCrashedAfterStart = "ContainerCrashedAfterStart"
	// ReasonContainerOOMKilled: the kernel killed it for its memory.
	ReasonContainerOOMKilled   = "ContainerOOMKilled"
	reasonContainerConfigError = "ContainerConfigError"
	reasonContainerCannotStart = "ContainerCannotStart"
	ReasonPodsNotCreated       = "PodsNotCreated"
	reasonProgressDeadline     = "ProgressDeadlineExceeded"
	ReasonUnschedulable        = "Unschedulable"
	// ReasonPodNotStarting: placed on a node, none of its containers has
	// started within the bound (Stalled); Pending, requests wait.
	ReasonPodNotStarting    = "PodNotStarting"
	conditionReplicaFailure = "ReplicaFailure"
	conditionProgressing    = "Progressing"
	causeProgressDeadline   = "ProgressDeadlineExceeded"
	causeCrashLoop          = "CrashLoopBackOff"
	imageFix                = "check the image reference, and that the nodes can pull it (the registry is reachable, imagePullSecrets), " +
		"or load the image onto the nodes"
	crashFix    = "read its log (kubectl logs POD -c CONTAINER --previous) and fix the app, its command, arguments or environment"
	runningFix  = "read its log (kubectl logs POD -c CONTAINER --previous): the app fails under its load or over time"
	oomFix      = "raise the container's memory limit (resources.limits.memory), or lower what the app keeps in memory"
	configFix   = "create the Secrets and ConfigMaps the pod template refers to, or fix the references"
	startFix    = "see kubectl describe pod POD"
	podsFix     = "see kubectl describe replicaset of the Deployment (a quota, a LimitRange or an admission webhook may refuse the pods)"
	progressFix = "see kubectl describe deployment and its pods (a pod that cannot be scheduled, or never becomes ready)"
	scheduleFix = "lower the pod's resource requests, fix its nodeSelector, affinity or tolerations, or add nodes"
)

// maxDetail bounds the kubelet's or controller's message quoted in a
// Failure's Message (a pull error can be several hundred bytes).
const maxDetail = 300

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
	"CreateContainerConfigError": reasonContainerConfigError,
	"CreateContainerError":       reasonContainerCannotStart,
	"RunContainerError":          reasonContainerCannotStart,
	"PreStartHookError":          reasonContainerCannotStart,
	"PostStartHookError":         reasonContainerCannotStart,
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
//
// prev is what Classify last said of the revision (nil: nothing, or that it
// was not failing). A container that crashed after serving keeps that name for
// the pods of the same template: under load the activator probes a
// restarted replica itself and sends it requests before the kubelet sees
// it ready, so a run that served and died within a second looks, in the
// pod's status, like a crash at start (its pod's readiness last changed
// before the run started). After an OOM kill, a run of the same container
// that ended SIGKILLed (exit code 137) is an OOM kill too: under load the
// runtime does not always see the kernel's OOM event in time and reports
// Error. An OOM kill is named as such whatever prev says; a new template
// is judged afresh.
func Classify(prev *Failure, pods []Pod, conds []Condition) (Failure, bool) {
	if prev != nil && prev.AfterStart() && prev.Template != "" {
		marked := make([]Pod, len(pods))
		copy(marked, pods)
		for i := range marked {
			if marked[i].Template == prev.Template {
				marked[i].served = prev.Container
				if prev.Reason == ReasonContainerOOMKilled {
					marked[i].oomBefore = prev.Container
				}
			}
		}
		pods = marked
	}
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
		return Failure{Reason: reasonProgressDeadline, Cause: c.Reason,
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
			if r == ReasonContainerCrashing {
				r = crashReason(p, &c)
			}
			return withTemplate(containerFailure(p.Name, &c, r, p.served == c.Name), p), true
		}
		if c.WaitingReason == "" && c.Restarts > 0 && c.LastReason != "" && c.LastExitCode != 0 {
			return withTemplate(containerFailure(p.Name, &c, crashReason(p, &c), p.served == c.Name), p), true // between two crashes
		}
	}
	return Failure{}, false
}

func withTemplate(f Failure, p *Pod) Failure {
	f.Template = p.Template
	return f
}

// ranAWhile is how long a run must have lasted to count as a crash after
// start when the pod's readiness does not tell (NotReadySince unknown).
const ranAWhile = time.Minute

// sigkilled is the exit code of a process killed by SIGKILL (128 + 9), as
// the kernel's OOM killer kills.
const sigkilled = 137

// crashReason names a crashed container's last exit as it was: killed for
// its memory, a crash after its pod had been ready (it served), or a
// crash at start.
func crashReason(p *Pod, c *Container) string {
	switch {
	case c.LastReason == "OOMKilled", c.LastExitCode == sigkilled && p.oomBefore == c.Name:
		return ReasonContainerOOMKilled
	case p.served == c.Name:
		return ReasonContainerCrashedAfterStart // an earlier run served (Classify)
	case c.LastStartedAt.IsZero():
		return ReasonContainerCrashing
	case !p.NotReadySince.IsZero() && p.NotReadySince.After(c.LastStartedAt):
		// The pod was ready during the run: it lost readiness after the
		// start. Strictly after: the API's times are whole seconds, and a
		// pod never ready shows its readiness lost in the second its
		// container started (a crash at start, not after serving).
		return ReasonContainerCrashedAfterStart
	case p.NotReadySince.IsZero() && c.LastFinishedAt.Sub(c.LastStartedAt) >= ranAWhile:
		return ReasonContainerCrashedAfterStart
	}
	return ReasonContainerCrashing
}

// ranFor is ", after running D" for a run of known length, else "".
func ranFor(c *Container) string {
	if c.LastStartedAt.IsZero() || c.LastFinishedAt.Before(c.LastStartedAt) {
		return ""
	}
	return ", after running " + c.LastFinishedAt.Sub(c.LastStartedAt).Round(time.Second).String()
}

// restarted is "restarted N time(s)".
func restarted(n int32) string {
	if n == 1 {
		return "restarted 1 time"
	}
	return fmt.Sprintf("restarted %d times", n)
}

// containerFailure is c's failure; servedBefore: an earlier run of its
// template crashed after serving (Classify).
func containerFailure(pod string, c *Container, reason string, servedBefore bool) Failure {
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
	case ReasonContainerCrashing, ReasonContainerCrashedAfterStart, ReasonContainerOOMKilled:
		if f.Cause == "" {
			f.Cause = causeCrashLoop
		}
		f.Message = crashMessage(kind, c, reason, servedBefore, fix)
	case reasonContainerConfigError:
		f.Message = fmt.Sprintf("%s %s cannot be created: %s: %s; %s", kind, c.Name, c.WaitingReason, detail(c.WaitingMessage), configFix)
	default:
		f.Message = fmt.Sprintf("%s %s (image %s) cannot start: %s: %s; %s", kind, c.Name, c.Image, c.WaitingReason,
			detail(c.WaitingMessage), fix(startFix))
	}
	return f
}

// crashMessage says how a container's last run ended, and the fix.
func crashMessage(kind string, c *Container, reason string, servedBefore bool, fix func(string) string) string {
	who := fmt.Sprintf("%s %s (image %s)", kind, c.Name, c.Image)
	switch reason {
	case ReasonContainerOOMKilled:
		limit := "it has no memory limit: the node ran out of memory"
		if c.MemoryLimit != "" {
			limit = "its memory reached its limit of " + c.MemoryLimit + ", or the node ran out of memory"
		}
		how := "OOMKilled"
		if c.LastReason != "OOMKilled" { // a SIGKILL after earlier OOM kills (Classify)
			how = c.LastReason + " after earlier runs were OOMKilled"
		}
		return fmt.Sprintf("%s was killed for its memory (%s, exit code %d: %s)%s, %s%s; %s", who, how, c.LastExitCode, limit,
			ranFor(c), restarted(c.Restarts), colon(c.LastMessage), oomFix)
	case ReasonContainerCrashedAfterStart:
		if servedBefore {
			return fmt.Sprintf("%s keeps crashing after serving (its runs serve requests, then it exits; a run can be too short for the kubelet "+
				"to see its pod ready): exit code %d (%s)%s, %s%s; %s", who, c.LastExitCode, c.LastReason, ranFor(c), restarted(c.Restarts),
				colon(c.LastMessage), fix(runningFix))
		}
		return fmt.Sprintf("%s crashed after it started serving: exit code %d (%s)%s, %s%s; %s", who, c.LastExitCode, c.LastReason,
			ranFor(c), restarted(c.Restarts), colon(c.LastMessage), fix(runningFix))
	}
	return fmt.Sprintf("%s exits at start: exit code %d (%s), %s%s; %s", who, c.LastExitCode, c.LastReason, restarted(c.Restarts),
		colon(c.LastMessage), fix(crashFix))
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
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "..."
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
