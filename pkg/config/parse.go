package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Value syntax is Knative's (knative.dev/pkg/configmap/parser): Go's
// strconv.ParseBool, strconv.ParseFloat, strconv.ParseInt(s, 10, 32) and
// time.ParseDuration, with no trimming. Each parser returns a violation
// whose fix shows a valid spelling; example is a valid value of the key
// (usually its default).

func parseBool(s string) (bool, *violation) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, spaced(s, broken("must be true or false", `write "true" or "false"`))
	}
	return b, nil
}

// parseFloat also rejects NaN and infinities, which strconv accepts and
// Knative lets through: no rule can hold for them (NaN compares false with
// every bound), so Ebb refuses them everywhere.
func parseFloat(s, example string) (float64, *violation) {
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, broken("must be a number of a usable size", fmt.Sprintf("write a plain number such as %q", example))
	case err != nil:
		return 0, spaced(s, broken("must be a number", fmt.Sprintf(`write a plain number such as %q: no unit, no "%%", no quotes inside`, example)))
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, broken("must be a finite number", fmt.Sprintf("write a plain number such as %q", example))
	}
	return f, nil
}

func parseInt32(s, example string) (int32, *violation) {
	i, err := strconv.ParseInt(s, 10, 32)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, broken(fmt.Sprintf("must be a whole number in [%d, %d]", math.MinInt32, math.MaxInt32),
			"use a smaller number")
	case err != nil:
		return 0, spaced(s, broken("must be a whole number", fmt.Sprintf("write digits only, such as %q", example)))
	}
	return int32(i), nil
}

func parseDuration(s, example string) (time.Duration, *violation) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
		return 0, broken("must be a duration with a unit", fmt.Sprintf("add a unit, e.g. %q for %s seconds", s+"s", s))
	}
	return 0, spaced(s, broken("must be a duration",
		fmt.Sprintf(`write a number with a unit such as %q or "1m30s" (units: ms, s, m, h)`, example)))
}

// parsePrewarmLead reads the prewarm-lead annotation: "auto"
// (PrewarmLeadAuto) or a duration.
func parsePrewarmLead(s, example string) (time.Duration, *violation) {
	if s == PrewarmLeadAutoText {
		return PrewarmLeadAuto, nil
	}
	d, bad := parseDuration(s, example)
	if bad != nil {
		bad.rule, bad.fix = "must be auto or a duration", `write auto, or a number with a unit such as "10s"`
	}
	return d, bad
}

// spaced improves v when the value only fails because of surrounding
// spaces, which Knative does not trim.
func spaced(s string, v *violation) *violation {
	if t := strings.TrimSpace(s); t != s && t != "" {
		v.fix = fmt.Sprintf("remove the spaces around the value: write %q", t)
	}
	return v
}

// formatFloat writes f without an exponent: 1000, 0.7, 0.01.
func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// formatDuration writes d the way Knative's ConfigMap does: 1h, 600s, 60s,
// 0s, and Go's notation below a second (1.5s, 500ms).
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// roundedSeconds suggests the nearest whole-second spelling of d (at least
// minimum).
func roundedSeconds(d, minimum time.Duration) string {
	r := d.Round(time.Second)
	if r < minimum {
		r = minimum
	}
	return formatDuration(r)
}
