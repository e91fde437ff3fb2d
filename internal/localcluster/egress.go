package localcluster

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1beta1 "k8s.io/apiserver/pkg/apis/apiserver/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// How the API server reaches Services. There is no kube-proxy and no cluster DNS here, but the API server
// calls a webhook whose clientConfig names a Service the way it does in any cluster: it resolves the Service
// to its ClusterIP (without --enable-aggregator-routing) and dials <ClusterIP>:<port> through the dialer of the
// "cluster" egress selection, presenting the TLS server name <service>.<namespace>.svc. kube-apiserver is
// started with an EgressSelectorConfiguration whose "cluster" selection is HTTP CONNECT over TLS to
// egressProxy, served by this process: the proxy maps a Service's ClusterIP:port, registered with
// ExposeService, to live backends (the managers' webhook ports on 127.0.0.1) and dials the first that accepts,
// as a Service in front of replicas would. Any other target (a kwok node's address, for logs and exec) is
// dialled as it is. So the webhook configurations are installed as in production and the manager's own
// certificate, issued for the Service's DNS name, is what the API server checks.

const (
	// egressDialTimeout bounds one dial of a backend; they are all on 127.0.0.1.
	egressDialTimeout = 2 * time.Second
	// egressCertValidity is the lifetime of the proxy's certificates: longer than any run of the cluster.
	egressCertValidity = 365 * 24 * time.Hour
)

// egressProxy is the HTTP CONNECT proxy of the API server's "cluster" egress selection.
type egressProxy struct {
	ln  net.Listener
	log logr.Logger

	mu       sync.Mutex
	services map[string]*exposedService // by "<ClusterIP>:<port>"
	conns    map[net.Conn]struct{}
	closed   bool
}

// exposedService is a Service port and the addresses of its backends, in dial order.
type exposedService struct {
	namespace, name string
	backends        []string
}

// startEgressProxy generates the proxy's TLS material in dir (a CA, the proxy's serving certificate for
// 127.0.0.1 and the API server's client certificate), listens on a free port of 127.0.0.1 and writes the
// EgressSelectorConfiguration kube-apiserver reads. It returns the proxy and the configuration's path.
func startEgressProxy(dir string, log logr.Logger) (*egressProxy, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	serving, pool, err := writeEgressCerts(dir)
	if err != nil {
		return nil, "", fmt.Errorf("generating the egress proxy's certificates: %w", err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{serving},
		ClientAuth:   tls.RequireAndVerifyClientCert, // the API server's client certificate only
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		return nil, "", fmt.Errorf("listening for the egress proxy: %w", err)
	}
	p := &egressProxy{ln: ln, log: log, services: map[string]*exposedService{}, conns: map[net.Conn]struct{}{}}
	config := filepath.Join(dir, "egress-selector.yaml")
	if err := writeEgressConfig(config, dir, ln.Addr().String()); err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	go p.serve()
	return p, config, nil
}

// writeEgressConfig writes the EgressSelectorConfiguration: the "cluster" selection goes through the proxy at
// addr, the others are direct.
func writeEgressConfig(path, dir, addr string) error {
	cfg := apiserverv1beta1.EgressSelectorConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1beta1.SchemeGroupVersion.String(), Kind: "EgressSelectorConfiguration"},
		EgressSelections: []apiserverv1beta1.EgressSelection{{
			Name: "cluster",
			Connection: apiserverv1beta1.Connection{
				ProxyProtocol: apiserverv1beta1.ProtocolHTTPConnect,
				Transport: &apiserverv1beta1.Transport{TCP: &apiserverv1beta1.TCPTransport{
					URL: "https://" + addr,
					TLSConfig: &apiserverv1beta1.TLSConfig{
						CABundle:   filepath.Join(dir, "ca.crt"),
						ClientCert: filepath.Join(dir, "client.crt"),
						ClientKey:  filepath.Join(dir, "client.key"),
					},
				}},
			},
		}},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

// writeEgressCerts creates a CA, signs with it the proxy's serving certificate (127.0.0.1) and the API
// server's client certificate, and writes ca.crt, client.crt and client.key into dir. It returns the serving
// key pair and the pool of the CA.
func writeEgressCerts(dir string) (tls.Certificate, *x509.CertPool, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "drover-local egress CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(egressCertValidity), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	servingCert, servingKey, err := issueEgressCert(ca, caKey, 2, "drover-local egress proxy", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	clientCert, clientKey, err := issueEgressCert(ca, caKey, 3, "kube-apiserver", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	files := map[string][]byte{"ca.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"client.crt": clientCert, "client.key": clientKey}
	for name, data := range files {
		if err := writeFileAtomic(filepath.Join(dir, name), data); err != nil {
			return tls.Certificate{}, nil, err
		}
	}
	serving, err := tls.X509KeyPair(servingCert, servingKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return serving, pool, nil
}

// issueEgressCert signs a certificate for 127.0.0.1 with the egress CA and returns it and its key, in PEM.
func issueEgressCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, serial int64, cn string, usage x509.ExtKeyUsage) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: ca.NotBefore, NotAfter: ca.NotAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// expose adds backends to the Service port at target ("<ClusterIP>:<port>"), after those it has.
func (p *egressProxy) expose(target, namespace, name string, backends []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.services[target]
	if s == nil {
		s = &exposedService{namespace: namespace, name: name}
		p.services[target] = s
	}
	for _, b := range backends {
		if !slices.Contains(s.backends, b) {
			s.backends = append(s.backends, b)
		}
	}
}

// removeBackend takes addr out of every Service.
func (p *egressProxy) removeBackend(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.services {
		s.backends = slices.DeleteFunc(s.backends, func(b string) bool { return b == addr })
	}
}

// close stops accepting and cuts the tunnels open.
func (p *egressProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
}

func (p *egressProxy) serve() {
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		go p.handle(conn)
	}
}

// track records an open connection so that close cuts it; false when the proxy is closed already.
func (p *egressProxy) track(c net.Conn, open bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !open {
		delete(p.conns, c)
		return true
	}
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// handle serves one CONNECT request: the API server opens one connection per tunnel.
func (p *egressProxy) handle(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	if !p.track(conn, true) {
		return
	}
	defer p.track(conn, false)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(conn, "HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n")
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	upstream, err := p.dial(req.URL.Host)
	if err != nil {
		p.log.V(1).Info("Egress proxy: cannot reach the target", "target", req.URL.Host, "error", err.Error())
		_, _ = io.WriteString(conn, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n")
		return
	}
	defer func() { _ = upstream.Close() }()
	if !p.track(upstream, true) {
		return
	}
	defer p.track(upstream, false)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, upstream); done <- struct{}{} }()
	<-done // either side ended: the deferred closes end the other copy
}

// dial connects to target: to the first backend that accepts when target is an exposed Service port, else to
// target itself.
func (p *egressProxy) dial(target string) (net.Conn, error) {
	d := net.Dialer{Timeout: egressDialTimeout}
	p.mu.Lock()
	s, ok := p.services[target]
	var backends []string
	if ok {
		backends = slices.Clone(s.backends)
	}
	p.mu.Unlock()
	if !ok {
		return d.Dial("tcp", target)
	}
	var errs []error
	for _, b := range backends {
		c, err := d.Dial("tcp", b)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no backend of Service %s/%s accepts a connection (%d registered): %w", s.namespace, s.name,
		len(backends), errors.Join(errs...))
}

// ExposeService makes the API server reach the Service namespace/name on port (its port, not a target port)
// at backendAddrs (host:port), tried in order for each connection, after any registered before: what a
// Service with ready endpoints does in a cluster with a network. The Service must exist; a Service created
// again gets another ClusterIP and must be exposed again.
func (c *Cluster) ExposeService(ctx context.Context, namespace, name string, port int32, backendAddrs ...string) error {
	if c.egress == nil {
		return errors.New("the cluster has no egress proxy")
	}
	var svc corev1.Service
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &svc); err != nil {
		return fmt.Errorf("exposing Service %s/%s: %w", namespace, name, err)
	}
	if ip := svc.Spec.ClusterIP; ip == "" || ip == corev1.ClusterIPNone {
		return fmt.Errorf("exposing Service %s/%s: it has no ClusterIP", namespace, name)
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port }) {
		return fmt.Errorf("exposing Service %s/%s: it has no port %d", namespace, name, port)
	}
	target := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port)))
	c.egress.expose(target, namespace, name, backendAddrs)
	c.log.V(1).Info("Service exposed", "service", namespace+"/"+name, "target", target, "backends", backendAddrs)
	return nil
}
