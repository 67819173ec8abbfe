package config

import (
	"fmt"
	"strings"
	"time"
)

// Typed rows of the key table: each binds a parser to one field.

func boolKey(doc KeyDoc, field func(*Autoscaler) *bool) configKey {
	doc.Type = "bool"
	return configKey{KeyDoc: doc, parse: func(a *Autoscaler, raw string) *violation {
		b, v := parseBool(raw)
		if v == nil {
			*field(a) = b
		}
		return v
	}}
}

func floatKey(doc KeyDoc, field func(*Autoscaler) *float64, rule func(float64) *violation) configKey {
	doc.Type = "float"
	k := configKey{KeyDoc: doc, parse: func(a *Autoscaler, raw string) *violation {
		f, v := parseFloat(raw, doc.Default)
		if v == nil {
			*field(a) = f
		}
		return v
	}}
	if rule != nil {
		k.check = func(a *Autoscaler) *violation { return rule(*field(a)) }
	}
	return k
}

func int32Key(doc KeyDoc, field func(*Autoscaler) *int32, rule func(int32) *violation) configKey {
	doc.Type = "int32"
	return configKey{KeyDoc: doc, parse: func(a *Autoscaler, raw string) *violation {
		i, v := parseInt32(raw, doc.Default)
		if v == nil {
			*field(a) = i
		}
		return v
	}, check: func(a *Autoscaler) *violation { return rule(*field(a)) }}
}

func durationKey(doc KeyDoc, field func(*Autoscaler) *time.Duration, rule func(time.Duration) *violation) configKey {
	doc.Type = "duration"
	return configKey{KeyDoc: doc, parse: func(a *Autoscaler, raw string) *violation {
		d, v := parseDuration(raw, doc.Default)
		if v == nil {
			*field(a) = d
		}
		return v
	}, check: func(a *Autoscaler) *violation { return rule(*field(a)) }}
}

// Rules shared by ConfigMap keys and annotations.

func atLeast(f, minimum float64, fix string) *violation {
	if f < minimum {
		return broken("must be at least "+formatFloat(minimum), fix)
	}
	return nil
}

func above(f, minimum float64, fix string) *violation {
	if f <= minimum {
		return broken("must be above "+formatFloat(minimum), fix)
	}
	return nil
}

func within(f, lo, hi float64, fix string) *violation {
	if f < lo || f > hi {
		return broken(fmt.Sprintf("must be within [%s, %s]", formatFloat(lo), formatFloat(hi)), fix)
	}
	return nil
}

func nonNegative(i int32, fix string) *violation {
	if i < 0 {
		return broken("must be at least 0", fix)
	}
	return nil
}

// wholeSeconds requires d to be a whole number of seconds; the fix rounds
// it (to at least minimum).
func wholeSeconds(d, minimum time.Duration) *violation {
	if d%time.Second != 0 {
		return broken("must be a whole number of seconds", fmt.Sprintf("round it to %q", roundedSeconds(d, minimum)))
	}
	return nil
}

func checkTBC(f float64) *violation {
	if f < 0 && f != -1 {
		return broken("must be at least 0, or exactly -1",
			"set the spare capacity to keep (0 or more, e.g. 211), or -1 to keep the activator always in the request path")
	}
	return nil
}

func checkWindow(d time.Duration) *violation {
	if d < windowMin || d > windowMax {
		return broken("must be within [6s, 1h]", "set it to a whole number of seconds between 6s and 1h")
	}
	return wholeSeconds(d, windowMin)
}

func checkPanicWindowPercentage(f float64) *violation {
	return within(f, panicWindowPercentageMin, panicWindowPercentageMax,
		"set the panic window as a percentage of the stable window, between 1 and 100 (e.g. 10)")
}

// checkClass is Knative's class rule (a .knative.dev class must be KPA or
// HPA, other domains are left to their own autoscalers), plus Ebb's
// rejection of an empty class, which no autoscaler would pick up.
func checkClass(c string) *violation {
	fix := fmt.Sprintf("use %q (request-driven, Knative's default) or %q (CPU-driven)", ClassKPA, ClassHPA)
	switch {
	case c == "":
		return broken("must not be empty", fix)
	case strings.HasSuffix(c, ".knative.dev") && c != ClassKPA && c != ClassHPA:
		return broken("a class in the knative.dev domain must be "+ClassKPA+" or "+ClassHPA, fix)
	}
	return nil
}
