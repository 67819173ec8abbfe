package main

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// push sends b to its registry under its tag (REPO/NAME:VERSION), with
// the credentials of the docker config (~/.docker/config.json, as docker
// login and crane auth write them). The manifest's bytes are those of the
// archive, so the digest in images.txt and the kustomization is the one
// the registry serves. insecure allows plain HTTP (a localhost registry
// uses it anyway).
func push(b built, insecure bool) error {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(b.Tag, opts...)
	if err != nil {
		return fmt.Errorf("push %s: %w", b.Tag, err)
	}
	if err := remote.Write(tag, b.Img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %s: %w", b.Tag, err)
	}
	return nil
}
