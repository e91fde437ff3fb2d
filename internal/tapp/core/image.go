package core

import (
	"strings"

	"github.com/distribution/reference"
)

// Image references are normalised with github.com/distribution/reference, as container runtimes
// do: default registry docker.io, "library/" prefix for single-component Docker Hub names, and tag "latest"
// when neither tag nor digest is given (imageRef.key).

const defaultTag = "latest"

// imageRef is a parsed, normalised image reference.
type imageRef struct {
	name   string // domain/path, e.g. docker.io/library/nginx
	tag    string // empty when absent
	digest string // e.g. sha256:..., empty when absent
}

// key is the normalised form used for matching: name, tag (default latest unless a digest pins the image)
// and digest.
func (r imageRef) key() string {
	k := r.name
	switch {
	case r.tag != "":
		k += ":" + r.tag
	case r.digest == "":
		k += ":" + defaultTag
	}
	if r.digest != "" {
		k += "@" + r.digest
	}
	return k
}

// parseImage parses and normalises an image reference; false when it is not a valid reference.
func parseImage(s string) (imageRef, bool) {
	named, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return imageRef{}, false
	}
	r := imageRef{name: named.Name()}
	if t, ok := named.(reference.Tagged); ok {
		r.tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		r.digest = d.Digest().String()
	}
	return r, true
}

// imageMatches reports whether a container reports running the spec image: the spec image and the
// reported image are equal after normalisation, or the spec image is pinned by a digest with which the
// reported imageID ends. Unparsable references only match when the strings are equal.
func imageMatches(specImage, reportedImage, imageID string) bool {
	if specImage == "" {
		return false
	}
	spec, ok := parseImage(specImage)
	if !ok {
		return specImage == reportedImage
	}
	if spec.digest != "" && strings.HasSuffix(imageID, spec.digest) {
		return true
	}
	reported, ok := parseImage(reportedImage)
	return ok && reported.key() == spec.key()
}

// imagesEquivalent reports whether two spec images name the same image after normalisation.
func imagesEquivalent(a, b string) bool {
	if a == b {
		return true
	}
	ra, okA := parseImage(a)
	rb, okB := parseImage(b)
	return okA && okB && ra.key() == rb.key()
}
