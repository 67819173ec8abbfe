package scenario

import (
	"bytes"
	"encoding/json"
	"strconv"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// AppendJSON appends the line as `autoscaler simulate` prints it, without
// the newline:
//
//	{"t": 2, "recommended": 3, "desired": 3, "panic": false, "ebc": 181, "activatorInPath": true}
//
// A parked revision's line says so after activatorInPath ("parked": true);
// no other line carries the field.
//
// With explain it also carries the state, the observed averages when the
// decision had data (with the HPA class: the usage of the metric that gave
// the count), and the reasons:
//
//	..., "activatorInPath": true, "state": "active", "stable": 12.5, "panicAverage": 14,
//	"reasons": [{"code": "StableTarget", "message": "..."}]}
func AppendJSON(b []byte, l Line, explain bool) []byte {
	d := &l.Decision
	b = append(b, `{"t": `...)
	b = strconv.AppendInt(b, l.T, 10)
	b = append(b, `, "recommended": `...)
	b = strconv.AppendInt(b, int64(d.Recommended), 10)
	b = append(b, `, "desired": `...)
	b = strconv.AppendInt(b, int64(d.Desired), 10)
	b = append(b, `, "panic": `...)
	b = strconv.AppendBool(b, d.Panic)
	b = append(b, `, "ebc": `...)
	b = strconv.AppendInt(b, int64(d.EBC), 10)
	b = append(b, `, "activatorInPath": `...)
	b = strconv.AppendBool(b, d.ActivatorInPath)
	if d.Parked {
		b = append(b, `, "parked": true`...)
	}
	if explain {
		b = appendExplanation(b, d)
	}
	return append(b, '}')
}

func appendExplanation(b []byte, d *decider.Decision) []byte {
	b = append(b, `, "state": "`...)
	b = append(b, d.State.String()...)
	b = append(b, '"')
	switch {
	case d.HasData && d.Class == config.ClassHPA:
		b = append(b, `, "usage": `...)
		b = strconv.AppendFloat(b, d.Stable, 'g', -1, 64)
	case d.HasData:
		b = append(b, `, "stable": `...)
		b = strconv.AppendFloat(b, d.Stable, 'g', -1, 64)
		b = append(b, `, "panicAverage": `...)
		b = strconv.AppendFloat(b, d.PanicAverage, 'g', -1, 64)
	}
	b = append(b, `, "reasons": [`...)
	for i, r := range d.Reasons() {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"code": "`...)
		b = append(b, r.Code...)
		b = append(b, `", "message": `...)
		b = appendJSONString(b, r.Message())
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendJSONString appends s as a JSON string, leaving <, > and & readable.
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
