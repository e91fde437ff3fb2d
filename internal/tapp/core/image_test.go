package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestParseImage(t *testing.T) {
	const dgst = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	tests := map[string]struct {
		want imageRef
		ok   bool
	}{
		"nginx":                         {want: imageRef{name: "docker.io/library/nginx"}, ok: true},
		"nginx:1.7.9":                   {want: imageRef{name: "docker.io/library/nginx", tag: "1.7.9"}, ok: true},
		"docker.io/nginx:1.7.9":         {want: imageRef{name: "docker.io/library/nginx", tag: "1.7.9"}, ok: true},
		"index.docker.io/library/nginx": {want: imageRef{name: "docker.io/library/nginx"}, ok: true},
		"user/app:v1":                   {want: imageRef{name: "docker.io/user/app", tag: "v1"}, ok: true},
		"localhost/app":                 {want: imageRef{name: "localhost/app"}, ok: true},
		"registry:5000/team/app:v2":     {want: imageRef{name: "registry:5000/team/app", tag: "v2"}, ok: true},
		"quay.io/app@" + dgst:           {want: imageRef{name: "quay.io/app", digest: dgst}, ok: true},
		"nginx:1.7.9@" + dgst:           {want: imageRef{name: "docker.io/library/nginx", tag: "1.7.9", digest: dgst}, ok: true},
		"[::1]:5000/app:v1":             {want: imageRef{name: "[::1]:5000/app", tag: "v1"}, ok: true},
		"":                              {},
		"Nginx":                         {},
		"nginx:":                        {},
		"nginx@sha256:short":            {},
	}
	for in, tc := range tests {
		t.Run(in, func(t *testing.T) {
			got, ok := parseImage(in)
			if ok != tc.ok {
				t.Fatalf("parseImage(%q) ok = %v, want %v", in, ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(imageRef{})); diff != "" {
				t.Errorf("parseImage(%q) (-want +got):\n%s", in, diff)
			}
		})
	}
}

func TestImageMatches(t *testing.T) {
	const d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	tests := map[string]struct {
		spec, reported, imageID string
		want                    bool
	}{
		"equal":                         {spec: "nginx:1.8", reported: "nginx:1.8", want: true},
		"short vs docker.io":            {spec: "nginx:1.8", reported: "docker.io/nginx:1.8", want: true},
		"short vs docker.io/library":    {spec: "nginx:1.8", reported: "docker.io/library/nginx:1.8", want: true},
		"bare means latest":             {spec: "nginx", reported: "docker.io/library/nginx:latest", want: true},
		"bare does not match a tag":     {spec: "nginx", reported: "nginx:1.8", want: false},
		"other tag":                     {spec: "nginx:1.8", reported: "nginx:1.7.9", want: false},
		"multi-tagged image":            {spec: "nginx:stable", reported: "nginx:1.8", imageID: "same", want: false},
		"digest pinned, imageID ends":   {spec: "nginx@" + d1, reported: "sha256:abc", imageID: "docker.io/library/nginx@" + d1, want: true},
		"digest pinned, other imageID":  {spec: "nginx@" + d1, reported: "nginx:1.8", imageID: "docker.io/library/nginx@sha256:22", want: false},
		"digest pinned, same ref":       {spec: "nginx@" + d1, reported: "docker.io/library/nginx@" + d1, want: true},
		"other registry":                {spec: "quay.io/nginx:1.8", reported: "nginx:1.8", want: false},
		"IPv6 registry, bare is latest": {spec: "[::1]:5000/app", reported: "[::1]:5000/app:latest", want: true},
		"unparsable equal":              {spec: "Bad:Image", reported: "Bad:Image", want: true},
		"unparsable different":          {spec: "Bad:Image", reported: "bad:image", want: false},
		"empty spec":                    {spec: "", reported: "", want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := imageMatches(tc.spec, tc.reported, tc.imageID); got != tc.want {
				t.Errorf("ImageMatches(%q, %q, %q) = %v", tc.spec, tc.reported, tc.imageID, got)
			}
		})
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := map[string]corev1.PullPolicy{
		"nginx":        corev1.PullAlways,
		"nginx:latest": corev1.PullAlways,
		"nginx:1.8":    corev1.PullIfNotPresent,
		"nginx@" + "sha256:1111111111111111111111111111111111111111111111111111111111111111": corev1.PullIfNotPresent,
		"": corev1.PullIfNotPresent,
	}
	for in, want := range tests {
		if got := defaultPullPolicy(in); got != want {
			t.Errorf("defaultPullPolicy(%q) = %s, want %s", in, got, want)
		}
	}
}
