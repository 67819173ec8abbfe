//go:build k8s

package k8s

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// containerEnv resolves a container's environment as the kubelet does:
// literal values with $(VAR) references to earlier variables, and the
// downward API's fieldRefs.
func containerEnv(pod *corev1.Pod, c corev1.Container) (map[string]string, []string, error) {
	env := map[string]string{}
	var order []string
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
			v = expand(v, env)
		case e.ValueFrom.FieldRef != nil:
			var err error
			if v, err = fieldValue(pod, e.ValueFrom.FieldRef.FieldPath); err != nil {
				return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		default:
			return nil, nil, fmt.Errorf("env %s: only values and fieldRefs are supported by the test kubelet", e.Name)
		}
		if _, seen := env[e.Name]; !seen {
			order = append(order, e.Name)
		}
		env[e.Name] = v
	}
	return env, order, nil
}

var refPattern = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// expand replaces $(VAR) with earlier variables' values (unknown ones stay
// as they are) and $$ with $.
func expand(s string, env map[string]string) string {
	return refPattern.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

func fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.annotations": pod.Annotations, "metadata.labels": pod.Labels} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(key, "']") {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("fieldRef %q is not supported by the test kubelet", path)
}
