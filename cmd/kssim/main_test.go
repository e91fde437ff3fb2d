package main

import (
	"flag"
	"testing"
	"time"
)

func TestFlagsConfig(t *testing.T) {
	cases := map[string]struct {
		args     []string
		wantAuto bool
		wantErr  bool
	}{
		"defaults":                 {},
		"deployments":              {args: []string{"--auto-status=deployments", "--report-delay=3s"}, wantAuto: true},
		"unknown automatic status": {args: []string{"--auto-status=pods"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("kssim", flag.ContinueOnError)
			f := addFlags(fs)
			if err := fs.Parse(append(tc.args, "--binding-delay=1s", "--status-delay=2s")); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.config()
			if (err != nil) != tc.wantErr {
				t.Fatalf("config error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if (cfg.AutoStatus != nil) != tc.wantAuto || !cfg.ScriptConfigMaps ||
				cfg.BindingDelay != time.Second || cfg.StatusDelay != 2*time.Second {
				t.Errorf("config = %+v", cfg)
			}
			if tc.wantAuto && cfg.AutoStatusDelay != 3*time.Second {
				t.Errorf("AutoStatusDelay = %v, want 3s", cfg.AutoStatusDelay)
			}
		})
	}
}
