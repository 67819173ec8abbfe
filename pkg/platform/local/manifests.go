package local

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest"
)

// revSpec is what the platform runs for one revision.
type revSpec struct {
	key         autoscaler.RevisionKey
	annotations map[string]string
	names       config.KnativeNames // from the pod template's labels (config.NamesOf)
	labels      map[string]string   // the pod template's labels
	argv        []string            // command + args
	env         []string            // KEY=VALUE from the container, without PORT
	dir         string
	probePath   string // readiness probe HTTP path ("": TCP)
	upstream    string // the queue-proxy's protocol to the app: config.UpstreamHTTP1 or config.UpstreamH2C
	concurrency int
	lb          activator.LoadBalancing
	origin      string
	// container is the first container's name, and its resources.requests
	// in cores and bytes (0: none), against which the HPA class's cpu and
	// memory utilizations are computed.
	container              string
	cpuRequest, memRequest float64
	// timeouts are a Knative revision's timeoutSeconds,
	// responseStartTimeoutSeconds and idleTimeoutSeconds, or a
	// Deployment's REVISION_*_TIMEOUT_SECONDS, for its queue-proxy (nil:
	// the queue-proxy's defaults); the activator applies the request
	// timeout too.
	timeouts manifest.Timeouts
}

// sameProcess reports whether two specs run the same processes (a
// difference means the replicas are replaced).
func (s revSpec) sameProcess(o revSpec) bool {
	return slices.Equal(s.argv, o.argv) && slices.Equal(s.env, o.env) && s.dir == o.dir &&
		s.probePath == o.probePath && s.concurrency == o.concurrency && s.upstream == o.upstream &&
		slices.Equal(s.timeoutEnv(), o.timeoutEnv())
}

// requestTimeout is the revision's request timeout: its timeoutSeconds, else
// Knative's default.
func (s revSpec) requestTimeout() time.Duration {
	if t := s.timeouts.Request; t != nil {
		return *t
	}
	return config.DefaultRevisionTimeout
}

// timeoutEnv is the queue-proxy's environment for the timeouts that are set.
func (s revSpec) timeoutEnv() []string {
	var env []string
	for _, e := range s.timeouts.Env() {
		env = append(env, e.Name+"="+e.Value)
	}
	return env
}

// state is what the manifests say.
type state struct {
	config    map[string]string // nil: no config-autoscaler given
	revisions map[autoscaler.RevisionKey]revSpec
	skipped   []string // Deployments not opted in, for a log line
	warnings  []string // fields not honoured (Knative's, or not run locally), for log lines
}

// manifestFiles lists the files behind the paths, sorted.
func manifestFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		for _, pat := range []string{"*.yaml", "*.yml", "*.json"} {
			m, _ := filepath.Glob(filepath.Join(p, pat)) // the pattern is valid
			files = append(files, m...)
		}
	}
	slices.Sort(files)
	return files, nil
}

// fingerprint identifies the files' current content by name, size and
// modification time; it changes when any file does.
func fingerprint(files []string) string {
	var b strings.Builder
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			fmt.Fprintf(&b, "%s:gone;", f)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", f, st.Size(), st.ModTime().UnixNano())
	}
	return b.String()
}

// load reads and decodes the files into a state. Any unreadable or invalid
// document fails the whole load: a half-read state would delete revisions.
func load(files []string, workDir string) (*state, error) {
	set := &manifest.Set{}
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", f, err))
			continue
		}
		s, err := manifest.Decode(f, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		set.Merge(s)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return stateOf(set, workDir)
}

func stateOf(set *manifest.Set, workDir string) (*state, error) {
	st := &state{revisions: map[autoscaler.RevisionKey]revSpec{}}
	cms := set.ConfigMapsNamed(config.ConfigMapName)
	if len(cms) > 1 {
		return nil, fmt.Errorf("%d config-autoscaler ConfigMaps (%s and %s): keep one", len(cms), cms[0].Origin, cms[1].Origin)
	}
	if len(cms) == 1 {
		st.config = maps.Clone(cms[0].Object.Data)
		if st.config == nil {
			st.config = map[string]string{}
		}
	}
	for _, h := range set.HPAs {
		st.warnings = append(st.warnings, fmt.Sprintf("%s: %s HorizontalPodAutoscaler %s/%s is not read: Ebb scales by annotations; "+
			"autoscaler convert turns it and its Deployment into them", h.Origin, h.APIVersion, h.Namespace(), h.Name()))
	}
	var errs []error
	for _, d := range set.Deployments {
		if d.Object.Labels[config.LabelEnabled] != "true" {
			st.skipped = append(st.skipped, d.Namespace()+"/"+d.Name())
			continue
		}
		if d.Knative != nil {
			for _, w := range d.Knative.Warnings {
				st.warnings = append(st.warnings, fmt.Sprintf("%s: %s %s/%s: %s", d.Origin, d.Kind(), d.Namespace(), d.Name(), w))
			}
			if len(d.Knative.Errors) > 0 {
				errs = append(errs, fmt.Errorf("%s: %s %s/%s: %s", d.Origin, d.Kind(), d.Namespace(), d.Name(),
					strings.Join(d.Knative.Errors, "; ")))
				continue
			}
		}
		st.warnings = append(st.warnings, localWarnings(d)...)
		spec, err := specOf(d, workDir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, dup := st.revisions[spec.key]; dup {
			errs = append(errs, fmt.Errorf("%s: revision %s is also defined at %s; keep one", spec.origin, spec.key, prev.origin))
			continue
		}
		st.revisions[spec.key] = spec
	}
	return st, errors.Join(errs...)
}

// specOf reads the first container of a Deployment's pod template.
func specOf(d manifest.Deployment, workDir string) (revSpec, error) {
	key := autoscaler.RevisionKey{Namespace: d.Namespace(), Name: d.Name()}
	tmpl := d.Object.Spec.Template
	if len(tmpl.Spec.Containers) == 0 {
		return revSpec{}, fmt.Errorf("%s: %s %s has no container; the local platform runs the first container's command", d.Origin, d.Kind(), key)
	}
	c := tmpl.Spec.Containers[0]
	argv := append(append([]string(nil), c.Command...), c.Args...)
	if len(argv) == 0 {
		return revSpec{}, fmt.Errorf("%s: container %q of %s has no command; locally the image is ignored, so set command (and args) to run the app", d.Origin,
			c.Name, key)
	}
	ann := d.TemplateAnnotations()
	spec := revSpec{key: key, annotations: maps.Clone(ann), argv: argv, dir: workDir, origin: d.Origin.String(),
		names: config.NamesOf(key.Namespace, key.Name, tmpl.Labels), labels: maps.Clone(tmpl.Labels)}
	var errs []error
	timeouts, err := d.Timeouts()
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %s %s: %w", d.Origin, d.Kind(), key, err))
	}
	spec.timeouts = timeouts
	if c.WorkingDir != "" {
		spec.dir = c.WorkingDir
	}
	for _, e := range c.Env {
		if e.Name != config.EnvPort && e.ValueFrom == nil {
			spec.env = append(spec.env, e.Name+"="+e.Value)
		}
	}
	spec.container = c.Name
	if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		spec.cpuRequest = q.AsApproximateFloat64()
	}
	if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
		spec.memRequest = q.AsApproximateFloat64()
	}
	if p := c.ReadinessProbe; p != nil && p.HTTPGet != nil {
		spec.probePath = p.HTTPGet.Path
	}
	proto, perr := config.ParseUpstreamProtocol(ann[config.AnnotationUpstreamProtocol])
	if perr != nil {
		errs = append(errs, fmt.Errorf("%s: Deployment %s: %w", d.Origin, key, perr))
	}
	spec.upstream = upstreamOf(c, proto)
	if v, ok := ann[config.AnnotationContainerConcurrency]; ok {
		cc, err := config.ParseContainerConcurrency(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: Deployment %s: %w", d.Origin, key, err))
		}
		spec.concurrency = int(cc)
	}
	lb, err := activator.ParseLoadBalancing(ann[config.AnnotationLoadBalancing])
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: Deployment %s: %w", d.Origin, key, err))
	}
	spec.lb = lb
	return spec, errors.Join(errs...)
}

// upstreamOf is the protocol the queue-proxy speaks to the container: the
// upstream-protocol annotation when set, else Knative's rule on its
// (first) port's name, h2c for a port named h2c.
func upstreamOf(c corev1.Container, annotation string) string {
	port := ""
	if len(c.Ports) > 0 {
		port = c.Ports[0].Name
	}
	return config.ResolveUpstreamProtocol(annotation, port)
}

// localWarnings name what of a revision's pod template the local platform
// does not run: it starts the first container's command with its literal
// environment, and mounts nothing.
func localWarnings(d manifest.Deployment) []string {
	pod := d.Object.Spec.Template.Spec
	at := fmt.Sprintf("%s: %s %s/%s: ", d.Origin, d.Kind(), d.Namespace(), d.Name())
	var out []string
	if n := len(pod.Volumes); n > 0 {
		out = append(out, fmt.Sprintf("%sspec.template.spec.volumes: %d volumes are not mounted locally; the app runs in its working directory", at, n))
	}
	if n := len(pod.InitContainers); n > 0 {
		out = append(out, fmt.Sprintf("%sspec.template.spec.initContainers: %d init containers are not run locally", at, n))
	}
	if len(pod.Containers) == 0 {
		return out
	}
	c := pod.Containers[0]
	for i, e := range c.Env {
		if e.ValueFrom != nil {
			out = append(out, fmt.Sprintf("%sspec.template.spec.containers[0].env[%d] (%s): valueFrom is not resolved locally; "+
				"the variable is not set", at, i, e.Name))
		}
	}
	if len(c.EnvFrom) > 0 {
		out = append(out, fmt.Sprintf("%sspec.template.spec.containers[0].envFrom: not resolved locally; its variables are not set", at))
	}
	return out
}
