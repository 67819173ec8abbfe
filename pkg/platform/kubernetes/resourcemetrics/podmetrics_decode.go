package resourcemetrics

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/valyala/fastjson"
	"k8s.io/apimachinery/pkg/api/resource"
)

// listDecoder is a parser and a read buffer, kept across Lists: both grow
// to the size of a namespace's List (a 1,000-pod List is ~400 KB and ~2 MB
// of parsed values), and regrowing them each sync costs more CPU than the
// decoding itself. Not safe for concurrent use: take one from
// getDecoder, give it back with putDecoder.
type listDecoder struct {
	parser fastjson.Parser
	buf    bytes.Buffer
}

// decoders is a free list of listDecoders. Not a sync.Pool: that drops
// its contents at every GC, about once a List at this size.
var decoders = make(chan *listDecoder, 2)

func getDecoder() *listDecoder {
	select {
	case d := <-decoders:
		return d
	default:
		return &listDecoder{}
	}
}

func putDecoder(d *listDecoder) {
	d.buf.Reset()
	select {
	case decoders <- d:
	default:
	}
}

// decodePodMetricsList reads a metrics.k8s.io/v1beta1 PodMetricsList in
// JSON, as metrics-server answers a List, into the usage of each pod by
// name. It reads only what the HPA needs (each item's name, timestamp and
// window, and each container's name with its cpu and memory usage) and
// gives the same values as decoding with k8s.io/metrics' types and
// UsageByPod (TestDecodePodMetricsListMatchesTyped), at a fraction of the
// CPU (BenchmarkResourceMetricsRead). Where it differs: resources other
// than cpu and memory are not parsed (the typed decoding fails the whole
// List on a malformed one), and of a key given twice the first counts,
// not the last.
//
// Malformed input is an error that names the item, the pod and the field;
// the List then gives no usage at all, as a failed List does.
func decodePodMetricsList(data []byte) (map[string]PodUsage, error) {
	d := getDecoder()
	defer putDecoder(d)
	return d.decode(data)
}

func (ld *listDecoder) decode(data []byte) (map[string]PodUsage, error) {
	root, err := ld.parser.ParseBytes(data)
	if err != nil {
		return nil, fmt.Errorf("decoding a PodMetricsList: %w", err)
	}
	if root.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("decoding a PodMetricsList: the answer is a JSON %s, not an object", root.Type())
	}
	if k := root.Get("kind"); k != nil && k.Type() == fastjson.TypeString && string(k.GetStringBytes()) != "PodMetricsList" {
		return nil, fmt.Errorf("decoding a PodMetricsList: the answer is a %q", k.GetStringBytes())
	}
	items, err := arrayField(root, "items")
	if err != nil {
		return nil, fmt.Errorf("decoding a PodMetricsList: %w", err)
	}
	out := make(map[string]PodUsage, len(items))
	var d itemDecoder
	for i, it := range items {
		name, u, err := d.item(it)
		if err != nil {
			return nil, fmt.Errorf("decoding a PodMetricsList: items[%d] (pod %q): %w", i, name, err)
		}
		out[name] = u
	}
	return out, nil
}

// itemDecoder remembers the last timestamp and window it parsed (the
// items of one List share a few of each: one per node scrape) and the
// container names it has seen (every pod of a revision repeats them).
type itemDecoder struct {
	lastTS     []byte
	ts         time.Time
	lastWindow []byte
	window     time.Duration
	names      []string
}

// name is b as a string, the same string each time for up to 8 names.
func (d *itemDecoder) name(b []byte) string {
	for _, n := range d.names {
		if n == string(b) {
			return n
		}
	}
	n := string(b)
	if len(d.names) < 8 {
		d.names = append(d.names, n)
	}
	return n
}

func (d *itemDecoder) item(v *fastjson.Value) (string, PodUsage, error) {
	var u PodUsage
	if v.Type() != fastjson.TypeObject {
		return "", u, fmt.Errorf("is a JSON %s, not an object", v.Type())
	}
	meta, err := objectField(v, "metadata")
	if err != nil {
		return "", u, err
	}
	name, err := stringField(meta, "name")
	if err != nil {
		return "", u, fmt.Errorf("metadata.%w", err)
	}
	if u.Timestamp, err = d.timestamp(v.Get("timestamp")); err != nil {
		return name, u, err
	}
	if u.Window, err = d.duration(v.Get("window")); err != nil {
		return name, u, err
	}
	cs, err := arrayField(v, "containers")
	if err != nil {
		return name, u, err
	}
	u.Containers = make([]ContainerUsage, len(cs))
	for j, c := range cs {
		if u.Containers[j], err = d.container(c); err != nil {
			return name, u, fmt.Errorf("containers[%d] (container %q): %w", j, u.Containers[j].Name, err)
		}
	}
	return name, u, nil
}

// timestamp reads a metav1.Time: RFC 3339 in local time, null or absent
// for the zero time.
func (d *itemDecoder) timestamp(v *fastjson.Value) (time.Time, error) {
	if v == nil || v.Type() == fastjson.TypeNull {
		return time.Time{}, nil
	}
	b, err := v.StringBytes()
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp is a JSON %s, not a string", v.Type())
	}
	if d.lastTS != nil && bytes.Equal(b, d.lastTS) {
		return d.ts, nil
	}
	t, err := time.Parse(time.RFC3339, string(b))
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp: %w", err)
	}
	d.lastTS, d.ts = b, t.Local()
	return d.ts, nil
}

// duration reads a metav1.Duration: absent is 0, and, as metav1 does, a
// null is an invalid duration.
func (d *itemDecoder) duration(v *fastjson.Value) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	b, err := v.StringBytes()
	if err != nil && v.Type() != fastjson.TypeNull {
		return 0, fmt.Errorf("window is a JSON %s, not a string", v.Type())
	}
	if d.lastWindow != nil && bytes.Equal(b, d.lastWindow) {
		return d.window, nil
	}
	w, err := time.ParseDuration(string(b))
	if err != nil {
		return 0, fmt.Errorf("window: %w", err)
	}
	d.lastWindow, d.window = b, w
	return w, nil
}

func (d *itemDecoder) container(v *fastjson.Value) (ContainerUsage, error) {
	var c ContainerUsage
	if v.Type() != fastjson.TypeObject {
		return c, fmt.Errorf("is a JSON %s, not an object", v.Type())
	}
	name, err := stringBytesField(v, "name")
	if err != nil {
		return c, err
	}
	c.Name = d.name(name)
	usage, err := objectField(v, "usage")
	if err != nil || usage == nil {
		return c, err
	}
	if c.CPUMilli, c.HasCPU, err = quantityField(usage, "cpu"); err != nil {
		return c, err
	}
	c.MemMilli, c.HasMemory, err = quantityField(usage, "memory")
	return c, err
}

// objectField is obj[key] when it is an object; nil when absent or null.
func objectField(obj *fastjson.Value, key string) (*fastjson.Value, error) {
	v := obj.Get(key)
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	if v.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("%s is a JSON %s, not an object", key, v.Type())
	}
	return v, nil
}

// arrayField is obj[key] when it is an array (nil when absent or null).
func arrayField(obj *fastjson.Value, key string) ([]*fastjson.Value, error) {
	v := obj.Get(key)
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	a, err := v.Array()
	if err != nil {
		return nil, fmt.Errorf("%s is a JSON %s, not an array", key, v.Type())
	}
	return a, nil
}

// stringField is obj[key] as a string ("" when obj is nil, or the key
// is absent or null).
func stringField(obj *fastjson.Value, key string) (string, error) {
	b, err := stringBytesField(obj, key)
	return string(b), err
}

// stringBytesField is stringField's bytes, valid until the next Parse.
func stringBytesField(obj *fastjson.Value, key string) ([]byte, error) {
	if obj == nil {
		return nil, nil
	}
	v := obj.Get(key)
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	b, err := v.StringBytes()
	if err != nil {
		return nil, fmt.Errorf("%s is a JSON %s, not a string", key, v.Type())
	}
	return b, nil
}

// quantityField reads usage[key] as a resource.Quantity's MilliValue, as
// Quantity's UnmarshalJSON does: a string or a bare number; a null is a
// zero quantity, present.
func quantityField(usage *fastjson.Value, key string) (int64, bool, error) {
	v := usage.Get(key)
	if v == nil {
		return 0, false, nil
	}
	var s []byte
	switch v.Type() {
	case fastjson.TypeNull:
		return 0, true, nil
	case fastjson.TypeString:
		s = v.GetStringBytes()
	case fastjson.TypeNumber:
		s = v.MarshalTo(nil)
	default:
		return 0, false, fmt.Errorf("usage.%s is a JSON %s, not a quantity", key, v.Type())
	}
	m, err := milliValue(s)
	if err != nil {
		return 0, false, fmt.Errorf("usage.%s: %w", key, err)
	}
	return m, true, nil
}

// milliValue is resource.ParseQuantity(s).MilliValue() (rounded up, as
// Quantity does), without parsing into a Quantity for the forms
// metrics-server writes: whole numbers with a suffix n, u, m, k, M, G,
// Ki, Mi or Gi, or none. Any other form goes to ParseQuantity.
func milliValue(s []byte) (int64, error) {
	if m, ok := fastMilli(s); ok {
		return m, nil
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(string(s)))
	if err != nil {
		return 0, fmt.Errorf("%q is not a quantity (such as 250m, 1500n or 64Mi): %w", s, err)
	}
	return q.MilliValue(), nil
}

// fastMilli is MilliValue of up to 15 digits and a known suffix, false
// for anything else (and where the result would overflow).
func fastMilli(s []byte) (int64, bool) {
	var v int64
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		if n == 15 {
			return 0, false
		}
		v = v*10 + int64(s[n]-'0')
		n++
	}
	if n == 0 {
		return 0, false
	}
	var div, mul int64
	switch string(s[n:]) {
	case "n":
		div = 1_000_000
	case "u":
		div = 1_000
	case "m":
		return v, true
	case "":
		mul = 1_000
	case "k":
		mul = 1_000_000
	case "M":
		mul = 1_000_000_000
	case "G":
		mul = 1_000_000_000_000
	case "Ki":
		mul = 1_000 << 10
	case "Mi":
		mul = 1_000 << 20
	case "Gi":
		mul = 1_000 << 30
	default:
		return 0, false
	}
	if div != 0 {
		return (v + div - 1) / div, true
	}
	if v > math.MaxInt64/mul {
		return 0, false
	}
	return v * mul, true
}
