//go:build k8s

package k8s

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// containerEnv resolves a container's environment as the kubelet does:
// literal values with $(VAR) references to earlier variables, and the
// downward API's fieldRefs, and secretKeyRefs (an optional one whose
// Secret or key is missing is left unset), read through secret.
func containerEnv(pod *corev1.Pod, c corev1.Container,
	secret func(ns, name string) (*corev1.Secret, error)) (map[string]string, []string, error) {
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
		case e.ValueFrom.SecretKeyRef != nil:
			var ok bool
			var err error
			if v, ok, err = secretValue(pod.Namespace, e.ValueFrom.SecretKeyRef, secret); err != nil {
				return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
			} else if !ok {
				continue
			}
		default:
			return nil, nil, fmt.Errorf("env %s: only values, fieldRefs and secretKeyRefs are supported by the test kubelet", e.Name)
		}
		if _, seen := env[e.Name]; !seen {
			order = append(order, e.Name)
		}
		env[e.Name] = v
	}
	return env, order, nil
}

// secretValue reads a secretKeyRef; ok is false for an optional one whose
// Secret or key does not exist.
func secretValue(ns string, ref *corev1.SecretKeySelector,
	secret func(ns, name string) (*corev1.Secret, error)) (v string, ok bool, err error) {
	optional := ref.Optional != nil && *ref.Optional
	s, err := secret(ns, ref.Name)
	switch {
	case apierrors.IsNotFound(err) && optional:
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("secret %s/%s: %w", ns, ref.Name, err)
	}
	b, found := s.Data[ref.Key]
	if !found {
		if sv, sfound := s.StringData[ref.Key]; sfound {
			return sv, true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("secret %s/%s has no key %q", ns, ref.Name, ref.Key)
	}
	return string(b), true, nil
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
