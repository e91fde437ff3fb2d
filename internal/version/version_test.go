package version

import (
	"strings"
	"testing"
)

func TestGetStamped(t *testing.T) {
	defer func(v, c, d string) { version, commit, date = v, c, d }(version, commit, date)
	version, commit, date = "v1.2.3", "abc123", "2026-11-28T00:00:00Z"
	got := Get()
	if got != (Info{Version: "v1.2.3", Commit: "abc123", Date: "2026-11-28T00:00:00Z"}) {
		t.Errorf("Get() = %+v, want the stamped values", got)
	}
	if s := got.String(); s != "v1.2.3 (commit abc123, built 2026-11-28T00:00:00Z)" {
		t.Errorf("String() = %q", s)
	}
}

func TestGetUnstampedHasEveryField(t *testing.T) {
	defer func(v, c, d string) { version, commit, date = v, c, d }(version, commit, date)
	version, commit, date = "", "", ""
	got := Get()
	for name, v := range map[string]string{"version": got.Version, "commit": got.Commit, "date": got.Date} {
		if strings.TrimSpace(v) == "" {
			t.Errorf("%s is empty: %+v", name, got)
		}
	}
}
