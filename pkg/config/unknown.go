package config

import (
	"fmt"
	"slices"
	"strings"

	"ebb.dev/ebb/pkg/fielderr"
)

// checkUnknownKeys rejects keys under autoscaling.knative.dev/ and
// autoscaling.ebb.dev/ that no annotation of the table uses. Knative ignores
// them; Ebb refuses them because a misspelt key would silently mean the
// default. The fix names the closest known key when there is one.
func (p *revisionParse) checkUnknownKeys() {
	keys := make([]string, 0, len(p.anns))
	for k := range p.anns {
		keys = append(keys, k)
	}
	slices.Sort(keys) // map order is random; errors are not
	for _, k := range keys {
		prefix := annotationPrefix(k)
		if prefix == "" || knownAnnotation(k) {
			continue
		}
		p.fail(k, p.anns[k], broken("is not an annotation Ebb knows under "+prefix+
			" (Knative would ignore it and use the default)", unknownKeyFix(k, prefix)))
	}
}

func annotationPrefix(key string) string {
	for _, prefix := range []string{KnativeAutoscalingPrefix, EbbAutoscalingPrefix} {
		if strings.HasPrefix(key, prefix) {
			return prefix
		}
	}
	return ""
}

func knownAnnotation(key string) bool {
	for _, k := range annotationKeys {
		if k.Key == key || slices.Contains(k.Aliases, key) {
			return true
		}
	}
	return false
}

func unknownKeyFix(key, prefix string) string {
	if s := suggestAnnotation(key); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	var names []string
	for _, k := range annotationKeys {
		if strings.HasPrefix(k.Key, prefix) {
			names = append(names, strings.TrimPrefix(k.Key, prefix))
		}
	}
	return fmt.Sprintf("remove it, or use one of the keys under %s: %s", prefix, strings.Join(names, ", "))
}

// suggestAnnotation returns the canonical key closest to key (comparing
// the names after the prefix, ignoring case, dashes and underscores, across
// every prefix: a key under the wrong prefix finds its right one), or ""
// when nothing is close.
func suggestAnnotation(key string) string {
	name := normalizeName(key[strings.Index(key, "/")+1:])
	best, bestDist := "", len(name)
	for _, k := range annotationKeys {
		for _, candidate := range append([]string{k.Key}, k.Aliases...) {
			d := fielderr.EditDistance(name, normalizeName(candidate[strings.Index(candidate, "/")+1:]))
			if d < bestDist {
				best, bestDist = k.Key, d
			}
		}
	}
	if bestDist > 1+len(name)/5 {
		return ""
	}
	return best
}

func normalizeName(s string) string {
	return strings.NewReplacer("-", "", "_", "", ".", "").Replace(strings.ToLower(s))
}
