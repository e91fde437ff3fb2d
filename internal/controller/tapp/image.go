package tapp

import (
	"regexp"
	"strings"
)

// Image references are normalised like github.com/distribution/reference's ParseNormalizedNamed (which this
// module does not depend on): default registry docker.io, "library/" prefix for single-component Docker Hub
// names, default tag "latest" when neither tag nor digest is given (§6.5).

const (
	defaultDomain    = "docker.io"
	legacyDomain     = "index.docker.io"
	officialRepoPath = "library/"
	defaultTag       = "latest"
)

var referenceRegexp = func() *regexp.Regexp {
	const (
		pathComponent   = `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
		domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		domain          = domainComponent + `(?:\.` + domainComponent + `)*(?::[0-9]+)?`
		tag             = `[\w][\w.-]{0,127}`
		digest          = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^((?:` + domain + `/)?` + pathComponent + `(?:/` + pathComponent + `)*)` +
		`(?::(` + tag + `))?(?:@(` + digest + `))?$`)
}()

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
	m := referenceRegexp.FindStringSubmatch(s)
	if len(m) != 4 || len(m[1]) > 255 {
		return imageRef{}, false
	}
	domain, remainder := splitDomain(m[1])
	if strings.ToLower(remainder) != remainder {
		return imageRef{}, false
	}
	return imageRef{name: domain + "/" + remainder, tag: m[2], digest: m[3]}, true
}

// splitDomain splits a repository name into its registry domain and path, applying Docker Hub's defaults.
func splitDomain(name string) (domain, remainder string) {
	i := strings.IndexRune(name, '/')
	if i == -1 || (!strings.ContainsAny(name[:i], ".:") && name[:i] != "localhost" && strings.ToLower(name[:i]) == name[:i]) {
		domain, remainder = defaultDomain, name
	} else {
		domain, remainder = name[:i], name[i+1:]
	}
	if domain == legacyDomain {
		domain = defaultDomain
	}
	if domain == defaultDomain && !strings.ContainsRune(remainder, '/') {
		remainder = officialRepoPath + remainder
	}
	return domain, remainder
}

// ImageMatches reports whether a container reports running the spec image (§6.5): the spec image and the
// reported image are equal after normalisation, or the spec image is pinned by a digest with which the
// reported imageID ends. Unparsable references only match when the strings are equal.
func ImageMatches(specImage, reportedImage, imageID string) bool {
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

// imagesEquivalent reports whether two spec images name the same image after normalisation (§5.3).
func imagesEquivalent(a, b string) bool {
	if a == b {
		return true
	}
	ra, okA := parseImage(a)
	rb, okB := parseImage(b)
	return okA && okB && ra.key() == rb.key()
}
