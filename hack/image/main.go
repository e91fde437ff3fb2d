// Command image builds drover's container image without Docker and without pulling a base image: an OCI
// image index of one image per platform, each a single layer holding the manager binary at /manager, its
// entrypoint, run as user 65532. It writes the index as an OCI image layout and pushes it when a reference
// is given (credentials from the Docker config, as docker login and crane leave them). `make image` builds
// the binaries and runs it:
//
//	image -out DIR -binary linux/amd64=PATH -binary linux/arm64=PATH [-version V] [-push REGISTRY/REPO:TAG]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want <os>/<arch>=<path>, got %q", v)
	}
	b[platform] = path
	return nil
}

func main() {
	bins := binaries{}
	out := flag.String("out", "", "directory of the OCI image layout to write (replaced)")
	version := flag.String("version", "v0.0.0-dev", "version label of the image")
	push := flag.String("push", "", "reference to push the index to; empty pushes nothing")
	flag.Var(bins, "binary", "<os>/<arch>=<path> of the manager built for that platform (repeat)")
	flag.Parse()
	if err := run(*out, *push, Options{Binaries: bins, Version: *version, Created: created()}); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// created is SOURCE_DATE_EPOCH when set (reproducible builds), else the zero time.
func created() time.Time {
	var sec int64
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		if _, err := fmt.Sscan(v, &sec); err == nil {
			return time.Unix(sec, 0).UTC()
		}
	}
	return time.Time{}
}

func run(out, push string, opts Options) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	idx, err := Build(opts)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if _, err := layout.Write(out, idx); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s (index %s)\n", out, digest)
	if push == "" {
		return nil
	}
	ref, err := name.ParseReference(push)
	if err != nil {
		return fmt.Errorf("parsing %q: %w", push, err)
	}
	if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing to %s: %w", ref, err)
	}
	fmt.Printf("pushed %s@%s\n", ref, digest)
	return nil
}
