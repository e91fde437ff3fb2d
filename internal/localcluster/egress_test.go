package localcluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apiserver/pkg/server/egressselector"
)

// echoServer accepts connections on 127.0.0.1 and answers each line with its name and the line.
func echoServer(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					_, _ = io.WriteString(c, name+":"+line)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// closedPort returns an address of 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestEgressProxyWithTheAPIServersDialer dials through the proxy with the API server's own egress dialer,
// built from the configuration file the proxy writes: a Service port reaches its first backend that accepts,
// any other address is dialled as it is, and a Service without a live backend is refused.
func TestEgressProxyWithTheAPIServersDialer(t *testing.T) {
	p, config, err := startEgressProxy(filepath.Join(t.TempDir(), "egress"), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	cfg, err := egressselector.ReadEgressSelectorConfiguration(config)
	if err != nil {
		t.Fatal(err)
	}
	if errs := egressselector.ValidateEgressSelectorConfiguration(cfg); len(errs) > 0 {
		t.Fatalf("the API server refuses the configuration: %v", errs.ToAggregate())
	}
	selector, err := egressselector.NewEgressSelector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dial, err := selector.Lookup(egressselector.Cluster.AsNetworkContext())
	if err != nil || dial == nil {
		t.Fatalf("no dialer for the cluster egress: %v", err)
	}

	first, second := echoServer(t, "first"), echoServer(t, "second")
	p.expose("10.96.0.10:443", "drover-system", "svc", []string{closedPort(t), first})
	p.expose("10.96.0.10:443", "drover-system", "svc", []string{second, first}) // appended, not doubled
	p.expose("10.96.0.11:443", "drover-system", "dead", []string{closedPort(t)})

	for target, want := range map[string]string{"10.96.0.10:443": "first:", second: "second:"} {
		if got := roundTrip(t, dial, target); got != want+"ping" {
			t.Errorf("through the proxy to %s: got %q, want %q", target, got, want+"ping")
		}
	}
	p.removeBackend(first)
	if got := roundTrip(t, dial, "10.96.0.10:443"); got != "second:ping" {
		t.Errorf("after removing the first backend: got %q, want the second", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := dial(ctx, "tcp", "10.96.0.11:443"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("a Service without a live backend: err = %v, want the proxy's 503", err)
	}
}

func roundTrip(t *testing.T, dial func(context.Context, string, string) (net.Conn, error), target string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", target)
	if err != nil {
		t.Fatalf("dialling %s: %v", target, err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading from %s: %v", target, err)
	}
	return strings.TrimSuffix(line, "\n")
}

// TestEgressProxyRefusesOtherClients: only a client presenting the API server's certificate gets a tunnel.
func TestEgressProxyRefusesOtherClients(t *testing.T) {
	p, _, err := startEgressProxy(filepath.Join(t.TempDir(), "egress"), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, err := tls.Dial("tcp", p.ln.Addr().String(), &tls.Config{InsecureSkipVerify: true})
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = io.WriteString(c, "CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: x\r\n\r\n")
		if err == nil {
			_, err = c.Read(make([]byte, 1))
		}
		_ = c.Close()
	}
	if err == nil {
		t.Error("a client without a certificate got an answer")
	}
}
