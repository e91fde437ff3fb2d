package main

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestImage builds the image from the real manager (linux/amd64) and a small linux/arm64 program, writes it
// as an OCI layout, reads it back, and runs the amd64 manager from its layer with --version.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	amd64 := goBuild(t, dir, "amd64", "github.com/drover-dev/drover/cmd/drover-manager",
		"-X github.com/drover-dev/drover/internal/version.version=v0.0.0-imagetest")
	arm64 := goBuild(t, dir, "arm64", "./testdata/arm64", "")
	out := filepath.Join(dir, "layout")
	if err := run(out, "", Options{Binaries: binaries{"linux/amd64": amd64, "linux/arm64": arm64}, Version: "v0.0.0-imagetest"}); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	var archs []string
	for _, desc := range manifest.Manifests {
		if desc.Platform == nil || desc.Platform.OS != "linux" {
			t.Fatalf("manifest %s has platform %v, want linux/*", desc.Digest, desc.Platform)
		}
		archs = append(archs, desc.Platform.Architecture)
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkConfig(t, img, desc.Platform.Architecture)
		binary := extractManager(t, img, filepath.Join(dir, "from-image-"+desc.Platform.Architecture))
		f, err := elf.Open(binary)
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != machines[desc.Platform.Architecture] {
			t.Errorf("%s layer: the binary is for %v", desc.Platform.Architecture, f.Machine)
		}
		_ = f.Close()
		if desc.Platform.Architecture == "amd64" {
			got, err := exec.Command(binary, "--version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(got), "drover-manager v0.0.0-imagetest (commit ") {
				t.Errorf("the manager from the image: --version = %q, %v", got, err)
			}
		}
	}
	if strings.Join(archs, ",") != "amd64,arm64" {
		t.Errorf("architectures %v, want amd64 and arm64", archs)
	}
}

func checkConfig(t *testing.T, img v1.Image, arch string) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != arch || cfg.OS != "linux" {
		t.Errorf("config platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, arch)
	}
	if strings.Join(cfg.Config.Entrypoint, " ") != Entrypoint || cfg.Config.User != User {
		t.Errorf("entrypoint %v user %q, want [%s] %q", cfg.Config.Entrypoint, cfg.Config.User, Entrypoint, User)
	}
	if layers, err := img.Layers(); err != nil || len(layers) != 1 {
		t.Errorf("%d layers (%v), want 1: no base image", len(layers), err)
	}
}

// extractManager writes the image's /manager to path, executable.
func extractManager(t *testing.T, img v1.Image, path string) string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) == 0 {
		t.Fatalf("layers: %v", err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("no %s in the layer", Entrypoint)
		}
		if err != nil {
			t.Fatal(err)
		}
		if "/"+hdr.Name != Entrypoint {
			continue
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

// goBuild builds pkg for linux/arch into dir, with the settings of make build so that the build cache
// `make test` warmed serves it (make image builds static binaries with -trimpath).
func goBuild(t *testing.T, dir, arch, pkg, ldflags string) string {
	t.Helper()
	out := filepath.Join(dir, "build-"+arch)
	cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s for %s: %v\n%s", pkg, arch, err, b)
	}
	return out
}
