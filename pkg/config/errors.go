package config

// Sources of a fielderr.Error: every constructor in this package returns all
// of its problems at once, each a *fielderr.Error (package ebb.dev/ebb/pkg/fielderr),
// joined with errors.Join; fielderr.Errors gets them back.
const (
	sourceConfigMap  = ConfigMapName // a key of the config-autoscaler ConfigMap
	sourceAnnotation = "annotation"  // a revision template annotation
)

// violation is a broken rule and how to fix it, before it is attached to a
// key and value.
type violation struct {
	rule, fix string
}

func broken(rule, fix string) *violation {
	return &violation{rule: rule, fix: fix}
}
