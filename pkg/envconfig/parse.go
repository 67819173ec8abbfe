package envconfig

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The parsers of the tables. Each takes the field it fills and returns an
// Apply function; the bounds are inclusive, and the rule it returns says
// them, so the error names what is allowed.

// String accepts any value, the empty one included.
func String[T any](field func(*T) *string) func(*T, string) error {
	return func(t *T, v string) error { *field(t) = v; return nil }
}

// Duration accepts a Go duration within [lo, hi].
func Duration[T any](lo, hi time.Duration, field func(*T) *time.Duration) func(*T, string) error {
	return func(t *T, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < lo || d > hi {
			return fmt.Errorf("must be a duration within [%v, %v]", lo, hi)
		}
		*field(t) = d
		return nil
	}
}

// Int64 accepts a whole number within [lo, hi].
func Int64[T any](lo, hi int64, field func(*T) *int64) func(*T, string) error {
	return func(t *T, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be a whole number within [%d, %d]", lo, hi)
		}
		*field(t) = n
		return nil
	}
}

// Int accepts a whole number within [lo, hi].
func Int[T any](lo, hi int64, field func(*T) *int) func(*T, string) error {
	return func(t *T, v string) error {
		var n int64
		if err := Int64(lo, hi, func(*T) *int64 { return &n })(t, v); err != nil {
			return err
		}
		*field(t) = int(n)
		return nil
	}
}

// Bytes accepts a byte count within [lo, hi], with an optional Ki, Mi or
// Gi suffix.
func Bytes[T any](lo, hi int64, field func(*T) *int64) func(*T, string) error {
	return func(t *T, v string) error {
		n, err := parseSize(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be a byte count within [%d, %d], optionally with a Ki, Mi or Gi suffix", lo, hi)
		}
		*field(t) = n
		return nil
	}
}

// IntBytes is Bytes into an int.
func IntBytes[T any](lo, hi int64, field func(*T) *int) func(*T, string) error {
	return func(t *T, v string) error {
		var n int64
		if err := Bytes(lo, hi, func(*T) *int64 { return &n })(t, v); err != nil {
			return err
		}
		*field(t) = int(n)
		return nil
	}
}

func parseSize(v string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if strings.HasSuffix(v, suffix) {
			v, mult = strings.TrimSuffix(v, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > (1<<62)/mult {
		return 0, errors.New("not a size")
	}
	return n * mult, nil
}

// Bool accepts what strconv.ParseBool does.
func Bool[T any](field func(*T) *bool) func(*T, string) error {
	return func(t *T, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("must be true or false")
		}
		*field(t) = b
		return nil
	}
}

// DNSLabel accepts a DNS label (ValidLabel).
func DNSLabel[T any](field func(*T) *string) func(*T, string) error {
	return func(t *T, v string) error {
		if !ValidLabel(v) {
			return errors.New("must be a DNS label: 1 to 63 of a-z, 0-9 and '-', not starting or ending with '-'")
		}
		*field(t) = v
		return nil
	}
}

// DNSName accepts a DNS name, lower-cased and without its outer dots; with
// empty set, the empty name too.
func DNSName[T any](empty bool, field func(*T) *string) func(*T, string) error {
	return func(t *T, v string) error {
		v = strings.ToLower(strings.Trim(v, "."))
		if v == "" && !empty {
			return errors.New("must be set: a DNS name such as cluster.local")
		}
		for _, l := range strings.Split(v, ".") {
			if v != "" && !ValidLabel(l) {
				return errors.New("must be a DNS name such as cluster.local")
			}
		}
		*field(t) = v
		return nil
	}
}

// ValidLabel reports whether s is a DNS label: 1 to 63 of a-z, 0-9 and
// '-', not starting or ending with '-'.
func ValidLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
