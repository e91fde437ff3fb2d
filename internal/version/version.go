// Package version holds drover's version, the commit it was built from and the build date, stamped by the
// build (`make build`, `make image`):
//
//	go build -ldflags "-X github.com/drover-dev/drover/internal/version.version=v0.1.0 \
//	    -X github.com/drover-dev/drover/internal/version.commit=$(git rev-parse HEAD) \
//	    -X github.com/drover-dev/drover/internal/version.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
//
// A binary built without them (go build, go install) reports what Go recorded of its checkout: the commit
// and its time, with "-dirty" when the tree had changes.
package version

import (
	"fmt"
	"runtime/debug"
)

// Stamped by -ldflags -X; empty when not stamped.
var (
	version string
	commit  string
	date    string
)

// Info is what a binary knows of its build.
type Info struct {
	Version, Commit, Date string
}

// Get returns the stamped values, each falling back to Go's build information, then to "unknown" (and
// "v0.0.0-dev" for the version).
func Get() Info {
	info := Info{Version: version, Commit: commit, Date: date}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && commit == "" && info.Commit != "" {
			info.Commit += "-dirty"
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
	}
	if info.Version == "" {
		info.Version = "v0.0.0-dev"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	if info.Date == "" {
		info.Date = "unknown"
	}
	return info
}

// String renders the information on one line: "<version> (commit <commit>, built <date>)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s)", i.Version, i.Commit, i.Date)
}
