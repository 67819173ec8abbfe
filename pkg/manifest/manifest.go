package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// DefaultNamespace is the namespace of an object that names none, as
// kubectl applies it by default.
const DefaultNamespace = "default"

// Origin says where an object was found.
type Origin struct {
	File     string // the name given to Decode ("-" for stdin)
	Document int    // 1-based, counting non-empty documents
	Line     int    // line of the document's first content line
	Item     int    // 1-based position in a v1 List; 0 when not in a List
}

// String renders the origin as "file.yaml:14 (document 2)", with ", item
// 3" inside the parentheses for an object of a List.
func (o Origin) String() string {
	if o.Item > 0 {
		return fmt.Sprintf("%s:%d (document %d, item %d)", o.File, o.Line, o.Document, o.Item)
	}
	return fmt.Sprintf("%s:%d (document %d)", o.File, o.Line, o.Document)
}

// ConfigMap is a decoded v1 ConfigMap.
type ConfigMap struct {
	Origin Origin
	Object *corev1.ConfigMap
}

// Deployment is a decoded apps/v1 Deployment.
type Deployment struct {
	Origin Origin
	Object *appsv1.Deployment
	// Knative is set when the Deployment was made from a Knative Service
	// or Configuration (what it could not carry, its timeouts); nil for an
	// apps/v1 Deployment.
	Knative *Knative
}

// Kind names what the revision was read from: "Deployment", or "Knative
// Service" / "Knative Configuration".
func (d Deployment) Kind() string {
	if d.Knative != nil {
		return "Knative " + d.Knative.Kind
	}
	return "Deployment"
}

// Namespace is the Deployment's namespace, DefaultNamespace when unset.
func (d Deployment) Namespace() string {
	if d.Object.Namespace == "" {
		return DefaultNamespace
	}
	return d.Object.Namespace
}

// Name is the Deployment's name (never empty: Decode requires it).
func (d Deployment) Name() string { return d.Object.Name }

// TemplateAnnotations are the pod template's annotations: where a revision's
// autoscaling.knative.dev/* settings live. Never nil.
func (d Deployment) TemplateAnnotations() map[string]string {
	if a := d.Object.Spec.Template.Annotations; a != nil {
		return a
	}
	return map[string]string{}
}

// Ignored is an object of a kind Ebb does not read.
type Ignored struct {
	Origin     Origin
	APIVersion string
	Kind       string
	Name       string // may be empty
	JSON       []byte // the object as decoded, for a caller that passes it on
}

// Set is everything decoded from one or more files, in file order.
type Set struct {
	ConfigMaps  []ConfigMap
	Deployments []Deployment // apps/v1 Deployments and Knative Services and Configurations
	HPAs        []HPA
	Ignored     []Ignored
}

// Merge appends the objects of o to s.
func (s *Set) Merge(o *Set) {
	s.ConfigMaps = append(s.ConfigMaps, o.ConfigMaps...)
	s.Deployments = append(s.Deployments, o.Deployments...)
	s.HPAs = append(s.HPAs, o.HPAs...)
	s.Ignored = append(s.Ignored, o.Ignored...)
}

// ConfigMapsNamed returns the ConfigMaps called name, in any namespace.
func (s *Set) ConfigMapsNamed(name string) []ConfigMap {
	var out []ConfigMap
	for _, cm := range s.ConfigMaps {
		if cm.Object.Name == name {
			out = append(out, cm)
		}
	}
	return out
}

// documentError is a document that cannot be decoded.
type documentError struct {
	Origin Origin
	Err    error
}

func (e *documentError) Error() string { return e.Origin.String() + ": " + e.Err.Error() }
func (e *documentError) unwrap() error { return e.Err }

// Decode reads every document of one file. name is only used in origins
// and errors. Empty documents are skipped. When any document cannot be
// decoded it returns nil and the errors.Join of one *DocumentError per
// broken document.
func Decode(name string, data []byte) (*Set, error) {
	s := &Set{}
	var errs []error
	n := 0
	for _, c := range split(data) {
		js, err := c.toJSON()
		if err == nil && js == nil {
			continue
		}
		n++
		o := Origin{File: name, Document: n, Line: c.firstContentLine()}
		if err == nil {
			err = s.add(o, js)
		}
		if err != nil {
			errs = append(errs, &documentError{Origin: o, Err: err})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// typeMeta is what every Kubernetes object starts with.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// add decodes one object (or the items of a List) into s.
func (s *Set) add(o Origin, js []byte) error {
	if t := bytes.TrimSpace(js); len(t) > 0 && t[0] == '[' {
		return s.addItems(o, js)
	}
	var tm typeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return errors.New("not a Kubernetes object: want a mapping with apiVersion and kind")
	}
	switch {
	case tm.APIVersion == "" || tm.Kind == "":
		return errors.New("not a Kubernetes object: apiVersion and kind are required")
	case tm.Kind == "List" && tm.APIVersion == "v1":
		var list struct {
			Items json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(js, &list); err != nil || len(list.Items) == 0 {
			return errors.New("v1 List: items must be a list of objects")
		}
		return s.addItems(o, list.Items)
	case tm.Kind == "ConfigMap":
		return s.addConfigMap(o, tm, js)
	case tm.Kind == "Deployment":
		return s.addDeployment(o, tm, js)
	case isKnativeServing(tm.APIVersion) && (tm.Kind == kindKnativeService || tm.Kind == kindKnativeConfiguration):
		return s.addKnative(o, tm, js)
	case tm.Kind == "HorizontalPodAutoscaler" && strings.HasPrefix(tm.APIVersion, "autoscaling/"):
		return s.addHPA(o, tm, js)
	}
	s.Ignored = append(s.Ignored, Ignored{Origin: o, APIVersion: tm.APIVersion, Kind: tm.Kind, Name: nameOf(js), JSON: js})
	return nil
}

func (s *Set) addItems(o Origin, js []byte) error {
	var items []json.RawMessage
	if err := json.Unmarshal(js, &items); err != nil {
		return errors.New("a list of objects must hold mappings with apiVersion and kind")
	}
	var errs []error
	for i, item := range items {
		io := o
		io.Item = i + 1
		if o.Item > 0 { // nested list: keep the outer position
			io.Item = o.Item
		}
		if err := s.add(io, item); err != nil {
			errs = append(errs, fmt.Errorf("item %d: %w", i+1, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Set) addConfigMap(o Origin, tm typeMeta, js []byte) error {
	if tm.APIVersion != "v1" {
		return fmt.Errorf("ConfigMap has apiVersion %q; want v1", tm.APIVersion)
	}
	cm := &corev1.ConfigMap{}
	if err := decodeStrict(js, cm); err != nil {
		return fmt.Errorf("v1 ConfigMap: %w", err)
	}
	if cm.Name == "" {
		return errors.New("v1 ConfigMap: metadata.name is required")
	}
	s.ConfigMaps = append(s.ConfigMaps, ConfigMap{Origin: o, Object: cm})
	return nil
}

func (s *Set) addDeployment(o Origin, tm typeMeta, js []byte) error {
	if tm.APIVersion != "apps/v1" {
		return fmt.Errorf("Deployment has apiVersion %q; want apps/v1", tm.APIVersion)
	}
	d := &appsv1.Deployment{}
	if err := decodeStrict(js, d); err != nil {
		return fmt.Errorf("apps/v1 Deployment: %w", err)
	}
	if d.Name == "" {
		return errors.New("apps/v1 Deployment: metadata.name is required")
	}
	s.Deployments = append(s.Deployments, Deployment{Origin: o, Object: d})
	return nil
}

// decodeStrict decodes js into obj, rejecting unknown fields as a
// Kubernetes API server with strict field validation does, and explains the
// usual YAML mistake of an unquoted number or boolean where a string is
// required.
func decodeStrict(js []byte, obj any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	err := dec.Decode(obj)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type != nil && te.Type.Kind() == reflect.String && (te.Value == "number" || te.Value == "bool") {
		// A Knative RevisionSpec embeds a PodSpec; its fields are at the top.
		field, value := locateScalar(js, strings.ReplaceAll(te.Field, "PodSpec.", ""))
		return fmt.Errorf("%s: %s is a %s but Kubernetes wants a string; quote it: \"%s\"", field, value, te.Value, value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field") {
		msg += " (Kubernetes rejects unknown fields: check the spelling and the indentation)"
	}
	return errors.New(msg)
}

// locateScalar finds the non-string value that encoding/json complained
// about at path (dot-separated; it stops at a map, whose keys may contain
// dots): the full field name, e.g.
// spec.template.metadata.annotations["autoscaling.knative.dev/target"], and
// the value as written in JSON.
func locateScalar(js []byte, path string) (field, value string) {
	var v any
	if json.Unmarshal(js, &v) != nil {
		return path, "the value"
	}
	for _, seg := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return path, "the value"
		}
		v = m[seg]
	}
	if m, ok := v.(map[string]any); ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if _, isString := m[k].(string); !isString {
				path, v = fmt.Sprintf("%s[%q]", path, k), m[k]
				break
			}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return path, "the value"
	}
	return path, string(b)
}

// nameOf returns metadata.name of any object, or "" when it has none.
func nameOf(js []byte) string {
	var m struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(js, &m) // best effort: the name only labels a note
	return m.Metadata.Name
}
