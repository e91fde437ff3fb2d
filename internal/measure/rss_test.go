package measure

import (
	"os"
	"testing"
)

func TestParseHighWaterMark(t *testing.T) {
	got, err := parseHighWaterMark([]byte("Name:\tmanager\nVmPeak:\t 2000 kB\nVmHWM:\t  1536 kB\nVmRSS:\t 1024 kB\n"))
	if err != nil || got != 1536*1024 {
		t.Fatalf("parseHighWaterMark = %d, %v; want %d", got, err, 1536*1024)
	}
	if _, err := parseHighWaterMark([]byte("VmRSS:\t 1024 kB\n")); err == nil {
		t.Fatal("want an error without a VmHWM line")
	}
	if _, err := parseHighWaterMark([]byte("VmHWM:\t lots\n")); err == nil {
		t.Fatal("want an error for a malformed line")
	}
}

func TestPeakRSSOfThisProcess(t *testing.T) {
	got, err := PeakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// A Go test binary holds at least a megabyte resident.
	if got < 1<<20 {
		t.Fatalf("peak RSS of the test process = %d bytes, want at least 1 MiB", got)
	}
}
