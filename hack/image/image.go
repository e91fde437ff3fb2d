package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entrypoint is where the manager binary sits in the image, and the image's entrypoint.
const Entrypoint = "/manager"

// User is the image's user: not root, the uid and gid distroless images call nonroot.
const User = "65532:65532"

// Options describe the image to build.
type Options struct {
	// Binaries maps each platform ("linux/amd64") to the manager binary built for it.
	Binaries map[string]string
	// Version labels the image (org.opencontainers.image.version).
	Version string
	// Created is the creation time recorded in each image config; the zero time keeps builds reproducible.
	Created time.Time
}

// Build returns the OCI image index of one image per platform: no base image, one layer holding the
// manager at Entrypoint, run as User.
func Build(opts Options) (v1.ImageIndex, error) {
	if len(opts.Binaries) == 0 {
		return nil, fmt.Errorf("no binary given")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	platforms := make([]string, 0, len(opts.Binaries))
	for p := range opts.Binaries {
		platforms = append(platforms, p)
	}
	slices.Sort(platforms)
	for _, p := range platforms {
		osName, arch, ok := strings.Cut(p, "/")
		if !ok || osName == "" || arch == "" {
			return nil, fmt.Errorf("platform %q is not <os>/<arch>", p)
		}
		img, err := platformImage(osName, arch, opts.Binaries[p], opts)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}}})
	}
	return idx, nil
}

func platformImage(osName, arch, binary string, opts Options) (v1.Image, error) {
	data, err := os.ReadFile(binary) //nolint:gosec // the binary the caller names
	if err != nil {
		return nil, err
	}
	layerTar, err := singleFileTar(strings.TrimPrefix(Entrypoint, "/"), data, opts.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = osName, arch
	cfg.Created = v1.Time{Time: opts.Created}
	cfg.Config = v1.Config{
		Entrypoint: []string{Entrypoint},
		User:       User,
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":    "drover-manager",
			"org.opencontainers.image.version":  opts.Version,
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
	}
	return mutate.ConfigFile(img, cfg)
}

// singleFileTar is a tar holding one executable file, owned by root, readable and runnable by everyone.
func singleFileTar(name string, data []byte, modTime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: modTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
