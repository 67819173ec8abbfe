package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestParseTimeoutSeconds: the one rule of the three timeout variables;
// NaN, infinities and values below a millisecond are refused, 0 only where
// it means something.
func TestParseTimeoutSeconds(t *testing.T) {
	tests := []struct {
		env, raw string
		want     time.Duration
		wantErr  string
	}{
		{EnvRevisionTimeout, "300", 300 * time.Second, ""},
		{EnvRevisionTimeout, " 30 ", 30 * time.Second, ""},
		{EnvRevisionTimeout, "0.3", 300 * time.Millisecond, ""},
		{EnvRevisionTimeout, "0.001", time.Millisecond, ""},
		{EnvRevisionTimeout, "3600", time.Hour, ""},
		{EnvRevisionTimeout, "NaN", 0, "must be a number of seconds within [0.001, 3600]"},
		{EnvRevisionTimeout, "1e-300", 0, "within [0.001, 3600]"},
		{EnvRevisionTimeout, "+Inf", 0, "within [0.001, 3600]"},
		{EnvRevisionTimeout, "0", 0, "within [0.001, 3600]"},
		{EnvRevisionTimeout, "3600.5", 0, "within [0.001, 3600]"},
		{EnvRevisionTimeout, "-1", 0, "within [0.001, 3600]"},
		{EnvRevisionTimeout, "", 0, "within [0.001, 3600]"},
		{EnvResponseStartTimeout, "0", 0, ""},
		{EnvResponseStartTimeout, "1e-300", 0, "must be 0 (the request timeout) or a number of seconds within [0.001, 3600]"},
		{EnvIdleTimeout, "0", 0, ""},
		{EnvIdleTimeout, "120", 2 * time.Minute, ""},
		{EnvIdleTimeout, "nan", 0, "must be 0 (none) or"},
	}
	for _, tt := range tests {
		t.Run(tt.env+"="+tt.raw, func(t *testing.T) {
			got, err := ParseTimeoutSeconds(tt.env, tt.raw)
			fe := TimeoutError(tt.env, tt.raw)
			if tt.wantErr == "" {
				if err != nil || fe != nil || got != tt.want {
					t.Fatalf("got %v, %v, %v; want %v", got, err, fe, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v; want one saying %q", err, tt.wantErr)
			}
			want := `environment variable "` + tt.env + `" = "` + tt.raw + `": ` + err.Error() + "; write a number of seconds"
			if fe == nil || !strings.HasPrefix(fe.Error(), want) || !strings.Contains(fe.Error(), "remove the variable (default: ") {
				t.Errorf("TimeoutError = %v; want it to start %q and name the default", fe, want)
			}
		})
	}
	if _, err := ParseTimeoutSeconds("PORT", "1"); !errors.Is(err, errNotTimeoutEnv) {
		t.Errorf("PORT: %v, want ErrNotTimeoutEnv", err)
	}
}

func TestTimeoutOrderErrors(t *testing.T) {
	if errs := TimeoutOrderErrors(time.Minute, time.Minute, 0); len(errs) != 0 {
		t.Errorf("equal and zero: %v", errs)
	}
	errs := TimeoutOrderErrors(30*time.Second, 45*time.Second, 31*time.Second)
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), `"REVISION_RESPONSE_START_TIMEOUT_SECONDS" = "45": must not exceed REVISION_TIMEOUT_SECONDS (30)`) ||
		!strings.Contains(errs[1].Error(), `"REVISION_IDLE_TIMEOUT_SECONDS" = "31"`) {
		t.Errorf("errors %v", errs)
	}
}

// FuzzParseTimeoutSeconds: whatever the value, a taken one is 0 (where 0
// means something) or within [1ms, 1h], and writes back to itself.
func FuzzParseTimeoutSeconds(f *testing.F) {
	for _, s := range []string{"300", "0", "0.3", "NaN", "1e-300", "Inf", "-0", "0x1p-3", " 7 ", "3600", "0.0005", "1_0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, env := range TimeoutEnvs {
			d, err := ParseTimeoutSeconds(env, raw)
			if err != nil {
				continue
			}
			if d != 0 && (d < time.Millisecond || d > time.Hour) || d == 0 && env == EnvRevisionTimeout {
				t.Fatalf("%s=%q read as %v", env, raw, d)
			}
			again, err := ParseTimeoutSeconds(env, TimeoutSecondsText(d))
			if err != nil || again != d {
				t.Fatalf("%s=%q: %v written %q reads %v, %v", env, raw, d, TimeoutSecondsText(d), again, err)
			}
		}
	})
}
