// Command images builds every image of Ebb (`make images`): the
// autoscaler, the activator, the queue-proxy, the sample apps (hello,
// grpchello, cpuwork) and the pod sandbox's pause, each one static Go
// binary (CGO_ENABLED=0, -trimpath) in a one-layer OCI image with no base
// image, made with go-containerregistry: no Docker daemon, no registry,
// nothing pulled. Every timestamp is the epoch, so the same sources and Go
// give the same digests.
//
// For each image it writes OUT/NAME.tar, an OCI archive that `ctr -n
// k8s.io images import` loads under both REPO/NAME:VERSION and
// REPO/NAME@sha256:DIGEST, and it lists them all in OUT/images.txt, one
// line each: NAME TAG DIGEST SIZE (SIZE: bytes a pull fetches). It also
// writes OUT/kustomization.yaml, deploy/ with these images (by digest):
// `kubectl apply -k OUT` installs exactly what was built (docs/kubernetes.md).
//
//	go run ./hack/images -out bin/images [-repo ebb.dev] [-version V] [-arch amd64] [-push [-insecure]]
//
// -push also pushes each image to REPO/NAME:VERSION (make push), for a
// cluster that pulls from a registry.
// VERSION defaults to the file VERSION, else `git describe --always --dirty`;
// never "latest".
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

var (
	tagRE  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	repoRE = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$`)
)

func run(args []string) error {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	out := fs.String("out", "bin/images", "directory for the archives, images.txt and kustomization.yaml")
	repo := fs.String("repo", "ebb.dev", "registry and path the images are named under (REPO/NAME:VERSION)")
	version := fs.String("version", "", "the images' tag (default: the file VERSION, else git describe --always --dirty)")
	arch := fs.String("arch", runtime.GOARCH, "GOARCH of the binaries and the images (linux only)")
	deployDir := fs.String("deploy", "deploy", "the kustomization the generated one builds on")
	pushTo := fs.Bool("push", false, "also push each image to REPO/NAME:VERSION (docker config credentials)")
	insecure := fs.Bool("insecure", false, "with -push: the registry speaks plain HTTP")
	example := fs.String("example", "deploy/kubernetes/example-app.yaml", "the example app OUT/example installs (empty: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every image is built; flags only", fs.Args())
	}
	v, err := resolveVersion(*version)
	if err != nil {
		return err
	}
	if !repoRE.MatchString(*repo) {
		return fmt.Errorf("-repo %q: not a registry path (lower-case host[:port]/path, e.g. registry.example:5000/ebb)", *repo)
	}
	binDir := filepath.Join(*out, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	if err := compile(binDir, *arch); err != nil {
		return err
	}
	var all []built
	for _, s := range specs {
		binary, err := os.ReadFile(filepath.Join(binDir, s.Name))
		if err != nil {
			return err
		}
		img, err := build(s, binary, *arch)
		if err != nil {
			return err
		}
		b, err := describe(s.Name, *repo+"/"+s.Name+":"+v, img)
		if err != nil {
			return fmt.Errorf("image %s: %w", s.Name, err)
		}
		if err := writeArchive(filepath.Join(*out, s.Name+".tar"), b); err != nil {
			return fmt.Errorf("archive of %s: %w", s.Name, err)
		}
		if *pushTo {
			if err := push(b, *insecure); err != nil {
				return err
			}
		}
		all = append(all, b)
		fmt.Printf("%-11s %-40s %s  %5.1f MiB (%5.1f MiB unpacked)\n",
			s.Name, b.Tag, b.Digest.String()[:19], float64(b.Size)/(1<<20), float64(b.Unpack)/(1<<20))
	}
	var list bytes.Buffer
	for _, b := range all {
		fmt.Fprintf(&list, "%s %s %s %d\n", b.Name, b.Tag, b.Digest, b.Size)
	}
	if err := os.WriteFile(filepath.Join(*out, "images.txt"), list.Bytes(), 0o644); err != nil {
		return err
	}
	k, err := kustomization(*out, *deployDir, *repo, all)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "kustomization.yaml"), k, 0o644); err != nil {
		return err
	}
	if *example == "" {
		return nil
	}
	return writeExample(filepath.Join(*out, "example"), *example, *repo, all)
}

// writeExample is OUT/example: the example app (a copy: kustomize reads
// no file outside a kustomization's directory) with the images just built.
func writeExample(dir, app, repo string, all []built) error {
	data, err := os.ReadFile(app)
	if err != nil {
		return fmt.Errorf("-example: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(app)), data, 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("# Written by `make images` (hack/images): " + app + " with the images just built.\n")
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	fmt.Fprintf(&b, "  - %s\n", filepath.Base(app))
	writeImages(&b, repo, all)
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), b.Bytes(), 0o644)
}

// resolveVersion is the -version flag, else the file VERSION, else git's
// description of the checkout; it must be a valid tag and not "latest".
func resolveVersion(flagValue string) (string, error) {
	v, from := strings.TrimSpace(flagValue), "-version"
	if v == "" {
		if data, err := os.ReadFile("VERSION"); err == nil {
			v, from = strings.TrimSpace(string(data)), "the file VERSION"
		}
	}
	if v == "" {
		outb, err := exec.Command("git", "describe", "--always", "--dirty").Output()
		if err != nil {
			return "", fmt.Errorf("no version: -version is empty, there is no VERSION file, and git describe failed (%v); set VERSION=...", err)
		}
		v, from = strings.TrimSpace(string(outb)), "git describe --always --dirty"
	}
	if v == "latest" {
		return "", fmt.Errorf("version %q (from %s): images are never tagged latest; give a release version", v, from)
	}
	if !tagRE.MatchString(v) {
		return "", fmt.Errorf("version %q (from %s): not a valid image tag (letters, digits, _ . -, at most 128, not starting with . or -)", v, from)
	}
	return v, nil
}

// compile builds every image's binary into dir: static, for linux/arch,
// without paths of this machine or VCS stamps in it, so that it is the same
// wherever it is built.
func compile(dir, arch string) error {
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", dir + "/"}
	for _, s := range specs {
		args = append(args, s.Pkg)
	}
	cmd := exec.Command(goTool, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	for _, s := range specs {
		if filepath.Base(s.Pkg) != s.Name {
			return errors.New("image " + s.Name + ": its package's binary is named " + filepath.Base(s.Pkg))
		}
	}
	return nil
}

// kustomization is OUT/kustomization.yaml: the kustomization of deployDir
// with every image it names replaced by the one just built, by tag and
// digest (REPO/NAME:VERSION@sha256:...: the tag says which build, the
// digest pins the content). deploy/ names the images ebb.dev/NAME; the
// queue-proxy's also stands in the autoscaler's QUEUE_PROXY_IMAGE, which
// deploy/kustomizeconfig.yaml lets kustomize rewrite with the others.
func kustomization(out, deployDir, repo string, all []built) ([]byte, error) {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	absDeploy, err := filepath.Abs(deployDir)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(absOut, absDeploy)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Written by `make images` (hack/images): " + deployDir + " with the images just built.\n")
	b.WriteString("# Install it with `make deploy` (kubectl apply -k " + out + ").\n")
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	fmt.Fprintf(&b, "  - %s\n", filepath.ToSlash(rel))
	writeImages(&b, repo, all)
	return b.Bytes(), nil
}

// writeImages is a kustomization's images: each ebb.dev/NAME becomes the
// image built, by tag and digest.
func writeImages(b *bytes.Buffer, repo string, all []built) {
	b.WriteString("images:\n")
	for _, img := range all {
		fmt.Fprintf(b, "  - name: %s/%s\n    newName: %s/%s\n    newTag: %s\n    digest: %s\n",
			baseRepo, img.Name, repo, img.Name, tagOf(img.Tag), img.Digest)
	}
}

// baseRepo is where deploy/ names the images.
const baseRepo = "ebb.dev"
