package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// spec is one image: a static binary at /NAME, run as User.
type spec struct {
	Name string // the image is REPO/NAME; the binary /NAME
	Pkg  string // the Go package of the binary
	User string // uid:gid the image runs as
	Args []string
}

// specs are every image of Ebb, in the order images.txt lists them.
var specs = []spec{
	{Name: "autoscaler", Pkg: "./cmd/autoscaler", User: nonroot},
	{Name: "activator", Pkg: "./cmd/activator", User: nonroot},
	{Name: "queueproxy", Pkg: "./cmd/queueproxy", User: nonroot},
	{Name: "hello", Pkg: "./deploy/local/hello", User: nonroot},
	{Name: "grpchello", Pkg: "./deploy/local/grpchello", User: nonroot},
	{Name: "cpuwork", Pkg: "./deploy/local/cpuwork", User: nonroot},
	// Kubernetes' own pause image runs as 65535 too.
	{Name: "pause", Pkg: "./hack/pause", User: "65535:65535"},
}

// nonroot is distroless's nonroot user, the one deploy/ runs every
// container as (runAsUser 65532).
const nonroot = "65532:65532"

// epoch is every timestamp in an image (files, config, history), so that
// the same binary gives the same digest whenever and wherever it is built.
var epoch = time.Unix(0, 0).UTC()

// passwd and group name the users the images run as, for tools that look
// them up (the binaries themselves never do).
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"pause:x:65535:65535:pause:/nonexistent:/sbin/nologin\n"
	group = "root:x:0:\nnonroot:x:65532:\nnobody:x:65534:\npause:x:65535:\n"
)

// layerTar is the image's one layer: /etc/passwd, /etc/group, /tmp (1777,
// for a pod that mounts nothing there and has a writable root) and the
// binary as /NAME, owned by root, every time at the epoch.
func layerTar(name string, binary []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entry := func(h *tar.Header, body []byte) error {
		h.ModTime, h.Uid, h.Gid, h.Format = epoch, 0, 0, tar.FormatPAX
		if body != nil {
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	entries := []struct {
		h    tar.Header
		body []byte
	}{
		{tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755}, nil},
		{tar.Header{Typeflag: tar.TypeReg, Name: "etc/group", Mode: 0o644}, []byte(group)},
		{tar.Header{Typeflag: tar.TypeReg, Name: "etc/passwd", Mode: 0o644}, []byte(passwd)},
		{tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777}, nil},
		{tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755}, binary},
	}
	for i := range entries {
		if err := entry(&entries[i].h, entries[i].body); err != nil {
			return nil, fmt.Errorf("layer of %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// build makes the OCI image of s from its binary for linux/arch: no base
// image, one layer, the binary as the entrypoint.
func build(s spec, binary []byte, arch string) (v1.Image, error) {
	layerBytes, err := layerTar(s.Name, binary)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", s.Name, err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "make images (hack/images): " + s.Pkg},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Name, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + s.Name},
		Cmd:        s.Args,
		User:       s.User,
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels: map[string]string{
			"org.opencontainers.image.title":  s.Name,
			"org.opencontainers.image.source": "https://ebb.dev/ebb",
		},
	}
	return mutate.ConfigFile(img, cf)
}

// built is an image made, with what images.txt says of it.
type built struct {
	Name   string
	Tag    string // REPO/NAME:VERSION
	Digest v1.Hash
	Size   int64 // manifest, config and compressed layer: what a pull fetches
	Unpack int64 // the layer uncompressed: what it takes on the node
	Img    v1.Image
}

// DigestRef is the image by content: REPO/NAME@sha256:...
func (b built) DigestRef() string {
	repo := b.Tag[:len(b.Tag)-len(tagOf(b.Tag))-1]
	return repo + "@" + b.Digest.String()
}

func tagOf(ref string) string {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return ref[i+1:]
		}
	}
	return ""
}

func describe(name, tag string, img v1.Image) (built, error) {
	b := built{Name: name, Tag: tag, Img: img}
	var err error
	if b.Digest, err = img.Digest(); err != nil {
		return b, err
	}
	m, err := img.Manifest()
	if err != nil {
		return b, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return b, err
	}
	b.Size = int64(len(raw)) + m.Config.Size
	layers, err := img.Layers()
	if err != nil {
		return b, err
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return b, err
		}
		b.Size += n
		rc, err := l.Uncompressed()
		if err != nil {
			return b, err
		}
		u, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return b, err
		}
		b.Unpack += u
	}
	return b, nil
}

// writeArchive writes b as an OCI image layout in a tar (an "oci-archive",
// what `ctr images import` and `skopeo copy oci-archive:` read). Its index
// names the manifest twice, by tag and by digest
// (io.containerd.image.name), so that containerd keeps both names and a
// pod may use either; the manifest's bytes are the ones a registry would
// serve, so the digest is the same after a push.
func writeArchive(path string, b built) error {
	raw, err := b.Img.RawManifest()
	if err != nil {
		return err
	}
	cfg, err := b.Img.RawConfigFile()
	if err != nil {
		return err
	}
	cfgName, err := b.Img.ConfigName()
	if err != nil {
		return err
	}
	type desc struct {
		MediaType   types.MediaType   `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	manifestDesc := func(name string) desc {
		return desc{
			MediaType: types.OCIManifestSchema1, Digest: b.Digest.String(), Size: int64(len(raw)),
			Annotations: map[string]string{
				"io.containerd.image.name":          name,
				"org.opencontainers.image.ref.name": refName(name),
			},
		}
	}
	index, err := json.Marshal(struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     types.MediaType `json:"mediaType"`
		Manifests     []desc          `json:"manifests"`
	}{2, types.OCIImageIndex, []desc{manifestDesc(b.Tag), manifestDesc(b.DigestRef())}})
	if err != nil {
		return err
	}
	blobs := map[string][]byte{b.Digest.Hex: raw, cfgName.Hex: cfg}
	layers, err := b.Img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		blobs[d.Hex] = data
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	file := func(name string, body []byte) error {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: epoch, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := file("index.json", index); err != nil {
		return err
	}
	names := make([]string, 0, len(blobs))
	for n := range blobs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := file("blobs/sha256/"+n, blobs[n]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// refName is the OCI ref.name of a name: its digest, else its tag.
func refName(name string) string {
	if i := strings.LastIndex(name, "@"); i >= 0 {
		return name[i+1:]
	}
	return tagOf(name)
}
