package localcluster

import (
	"slices"
	"testing"
)

func TestInstalledArgsReplaceTheProcesssOwnFlags(t *testing.T) {
	m := InstalledManager{Namespace: "platform", Args: []string{
		"--controllers=tapp", "--namespace=$(POD_NAMESPACE)", "--metrics-bind-address=:8443",
		"--health-probe-bind-address=:8081", "--webhook-port=9443", "--webhook-cert-dir=/tmp/certs", "--leader-elect=true",
	}}
	got := installedArgs(m, "/k", "/certs", []int{1, 2, 3})
	want := []string{"--controllers=tapp", "--namespace=platform", "--leader-elect=true", "--kubeconfig=/k",
		"--metrics-bind-address=127.0.0.1:1", "--health-probe-bind-address=127.0.0.1:2", "--webhook-host=127.0.0.1",
		"--webhook-port=3", "--webhook-cert-dir=/certs"}
	if !slices.Equal(got, want) {
		t.Fatalf("installedArgs =\n%q\nwant\n%q", got, want)
	}
}
