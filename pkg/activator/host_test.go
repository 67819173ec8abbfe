package activator

import (
	"bytes"
	"strings"
	"testing"
)

func TestAppendKey(t *testing.T) {
	rules := HostRules{ClusterDomain: "cluster.local", LocalDomain: "localhost", LocalNamespace: "default"}
	tests := []struct {
		name, host, want string // want "" means no revision
	}{
		{name: "name.namespace", host: "hello.prod", want: "prod/hello"},
		{name: "with port", host: "hello.prod:8080", want: "prod/hello"},
		{name: "svc", host: "hello.prod.svc", want: "prod/hello"},
		{name: "svc with port", host: "hello.prod.svc:80", want: "prod/hello"},
		{name: "cluster domain", host: "hello.prod.svc.cluster.local", want: "prod/hello"},
		{name: "cluster domain, port, trailing dot", host: "hello.prod.svc.cluster.local.:8012", want: "prod/hello"},
		{name: "upper case", host: "Hello.PROD.Svc.Cluster.Local", want: "prod/hello"},
		{name: "local domain", host: "hello.localhost", want: "default/hello"},
		{name: "local domain with port", host: "hello.localhost:8080", want: "default/hello"},
		{name: "dashes and digits", host: "hello-00001.team-2", want: "team-2/hello-00001"},
		{name: "other cluster domain", host: "hello.prod.svc.example.com"},
		{name: "too many labels", host: "a.hello.prod"},
		{name: "one label", host: "hello"},
		{name: "empty", host: ""},
		{name: "only port", host: ":8080"},
		{name: "ip", host: "127.0.0.1:8080"},
		{name: "ipv6", host: "[::1]:8080"},
		{name: "empty label", host: "hello..svc"},
		{name: "leading dash", host: "-hello.prod"},
		{name: "underscore", host: "he_llo.prod"},
		{name: "long label", host: strings.Repeat("a", 64) + ".prod"},
		{name: "63 is fine", host: strings.Repeat("a", 63) + ".prod", want: "prod/" + strings.Repeat("a", 63)},
		{name: "bad port", host: "hello.prod:http"},
		{name: "name.namespace.local domain", host: "hello.prod.localhost:8080", want: "prod/hello"},
		{name: "local domain takes at most two labels", host: "a.hello.prod.localhost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("x")
			got, ok := rules.appendKey(prefix, []byte(tt.host))
			if ok != (tt.want != "") {
				t.Fatalf("AppendKey(%q) ok = %v, want %v (got %q)", tt.host, ok, !ok, got)
			}
			if want := "x" + tt.want; string(got) != want {
				t.Errorf("AppendKey(%q) = %q, want %q", tt.host, got, want)
			}
		})
	}
}

func TestAppendKeyWithoutLocalDomain(t *testing.T) {
	rules := HostRules{ClusterDomain: "cluster.local", LocalNamespace: "default"}
	got, ok := rules.appendKey(nil, []byte("hello.localhost"))
	if !ok || string(got) != "localhost/hello" {
		t.Errorf("AppendKey = %q, %v; want localhost/hello, true", got, ok)
	}
}

func TestAppendKeyAllocs(t *testing.T) {
	rules := HostRules{ClusterDomain: "cluster.local", LocalDomain: "localhost", LocalNamespace: "default"}
	buf := make([]byte, 0, 1024)
	host := []byte("hello.prod.svc.cluster.local:8080")
	if n := testing.AllocsPerRun(100, func() { rules.appendKey(buf[:0], host) }); n != 0 {
		t.Errorf("AppendKey allocates %v times, want 0", n)
	}
}

// FuzzAppendKey: no panic; a key is two valid labels; the canonical host
// of a key parses back to it, whatever the case, port and form.
func FuzzAppendKey(f *testing.F) {
	for _, s := range []string{"hello.prod", "hello.prod.svc.cluster.local:80", "HELLO.localhost.", "[::1]:1", "a..b", ":", "."} {
		f.Add(s)
	}
	rules := HostRules{ClusterDomain: "cluster.local", LocalDomain: "localhost", LocalNamespace: "default"}
	f.Fuzz(func(t *testing.T, host string) {
		key, ok := rules.appendKey(nil, []byte(host))
		if !ok {
			if len(key) != 0 {
				t.Fatalf("AppendKey(%q) failed but wrote %q", host, key)
			}
			return
		}
		if !validKey(key) {
			t.Fatalf("AppendKey(%q) = %q, not namespace/name", host, key)
		}
		ns, name, _ := bytes.Cut(key, []byte("/"))
		for _, form := range []string{"%s.%s", "%s.%s.svc", "%s.%s.svc.cluster.local:443"} {
			canon := strings.Replace(strings.Replace(form, "%s", string(name), 1), "%s", string(ns), 1)
			if string(ns) == "localhost" && form == "%s.%s" {
				continue // the local domain wins
			}
			again, ok := rules.appendKey(nil, []byte(strings.ToUpper(canon)))
			if !ok || !bytes.Equal(again, key) {
				t.Fatalf("AppendKey(%q) = %q, %v; want %q (from %q)", canon, again, ok, key, host)
			}
		}
	})
}
