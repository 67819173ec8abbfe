package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"
)

// fakeBinary stands for a compiled binary: the tests build no Go.
var fakeBinary = []byte("\x7fELF a static binary")

func TestSameBinarySameDigest(t *testing.T) {
	s := specs[0]
	a, err := build(s, fakeBinary, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	b, err := build(s, fakeBinary, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Fatalf("the same binary gave two digests: %s and %s", da, db)
	}
	c, err := build(s, append([]byte{}, append(fakeBinary, '!')...), "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if dc, _ := c.Digest(); dc == da {
		t.Fatalf("another binary gave the same digest %s", dc)
	}
}

func TestImageConfig(t *testing.T) {
	for _, s := range specs {
		img, err := build(s, fakeBinary, "arm64")
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != "arm64" {
			t.Errorf("%s: platform %s/%s, want linux/arm64", s.Name, cf.OS, cf.Architecture)
		}
		if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/"+s.Name {
			t.Errorf("%s: entrypoint %q", s.Name, got)
		}
		if strings.HasPrefix(cf.Config.User, "0") || cf.Config.User == "" {
			t.Errorf("%s: runs as %q, want a non-root user", s.Name, cf.Config.User)
		}
		if !cf.Created.Time.Equal(epoch) {
			t.Errorf("%s: created %v, want the epoch", s.Name, cf.Created)
		}
		layers, _ := img.Layers()
		if len(layers) != 1 {
			t.Fatalf("%s: %d layers, want 1", s.Name, len(layers))
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]*tar.Header{}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !h.ModTime.Equal(epoch) {
				t.Errorf("%s: %s has time %v", s.Name, h.Name, h.ModTime)
			}
			files[h.Name] = h
		}
		rc.Close()
		bin := files[s.Name]
		if bin == nil || bin.Mode != 0o755 || bin.Size != int64(len(fakeBinary)) {
			t.Errorf("%s: the binary in the layer: %+v", s.Name, bin)
		}
		if files["etc/passwd"] == nil || files["tmp/"] == nil {
			t.Errorf("%s: no /etc/passwd or /tmp in %v", s.Name, files)
		}
	}
}

func TestArchiveNamesTagAndDigest(t *testing.T) {
	img, err := build(specs[2], fakeBinary, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	b, err := describe("queueproxy", "registry.example:5000/ebb/queueproxy:v1.2.3", img)
	if err != nil {
		t.Fatal(err)
	}
	want := "registry.example:5000/ebb/queueproxy@" + b.Digest.String()
	if b.DigestRef() != want {
		t.Fatalf("digest ref %q, want %q", b.DigestRef(), want)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "queueproxy.tar")
	if err := writeArchive(path, b); err != nil {
		t.Fatal(err)
	}
	// Unpack it and read it back as an OCI layout with the library.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	root := filepath.Join(dir, "layout")
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, h.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(root)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range m.Manifests {
		if d.Digest != b.Digest {
			t.Errorf("index names %s, want %s", d.Digest, b.Digest)
		}
		names = append(names, d.Annotations["io.containerd.image.name"]+" "+d.Annotations["org.opencontainers.image.ref.name"])
	}
	wantNames := []string{b.Tag + " v1.2.3", want + " " + b.Digest.String()}
	if strings.Join(names, "\n") != strings.Join(wantNames, "\n") {
		t.Fatalf("names %q, want %q", names, wantNames)
	}
	back, err := idx.Image(b.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.Digest(); d != b.Digest {
		t.Fatalf("the archive's image is %s, want %s", d, b.Digest)
	}
	if _, err := back.Layers(); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again.tar")
	if err := writeArchive(again, b); err != nil {
		t.Fatal(err)
	}
	x, _ := os.ReadFile(path)
	y, _ := os.ReadFile(again)
	if !bytes.Equal(x, y) {
		t.Fatal("the same image gave two different archives")
	}
}

func TestVersion(t *testing.T) {
	for _, bad := range []string{"latest", "-rc1", "v1/2", strings.Repeat("a", 129)} {
		if _, err := resolveVersion(bad); err == nil {
			t.Errorf("version %q accepted", bad)
		}
	}
	if v, err := resolveVersion(" v0.3.0-4-gabcdef0-dirty\n"); err != nil || v != "v0.3.0-4-gabcdef0-dirty" {
		t.Errorf("got %q, %v", v, err)
	}
	if v, err := resolveVersion(""); err != nil || v == "" {
		t.Errorf("git describe: %q, %v", v, err)
	}
}

func TestKustomizationPinsEveryImage(t *testing.T) {
	var all []built
	for _, s := range specs {
		img, err := build(s, fakeBinary, "amd64")
		if err != nil {
			t.Fatal(err)
		}
		b, err := describe(s.Name, "registry.example/ebb/"+s.Name+":v9", img)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b)
	}
	out := t.TempDir()
	data, err := kustomization(out, "../../deploy", "registry.example/ebb", all)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string `json:"apiVersion"`
		Kind       string
		Resources  []string
		Images     []struct{ Name, NewName, NewTag, Digest string }
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if len(k.Resources) != 1 {
		t.Fatalf("resources %q", k.Resources)
	}
	if got, _ := filepath.Abs(filepath.Join(out, k.Resources[0])); got != mustAbs(t, "../../deploy") {
		t.Errorf("resource %q resolves to %s", k.Resources[0], got)
	}
	if len(k.Images) != len(specs) {
		t.Fatalf("%d images, want %d", len(k.Images), len(specs))
	}
	for i, img := range k.Images {
		s := specs[i]
		if img.Name != "ebb.dev/"+s.Name || img.NewName != "registry.example/ebb/"+s.Name || img.NewTag != "v9" ||
			img.Digest != all[i].Digest.String() {
			t.Errorf("image %d: %+v", i, img)
		}
	}
	js, _ := json.Marshal(k)
	if strings.Contains(string(js), "latest") {
		t.Errorf("latest in %s", js)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestPush: a pushed image is served by the registry under its tag with
// the digest images.txt gives (an in-memory registry on loopback).
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := build(specs[3], fakeBinary, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	b, err := describe("hello", host+"/ebb/hello:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	if err := push(b, true); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host+"/ebb/hello:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != b.Digest {
		t.Fatalf("the registry serves %s, images.txt says %s", desc.Digest, b.Digest)
	}
	if err := push(b, false); err == nil && !strings.HasPrefix(host, "127.0.0.1") {
		t.Error("a plain-HTTP registry accepted a push without -insecure")
	}
}
