// Package certs puts the manager's webhook serving certificate in place, without cert-manager, and says when it
// is there.
//
// The API server calls drover's admission and conversion webhooks through the Service in
// front of the manager, as https://<service>.<namespace>.svc, and trusts the caBundle of each webhook
// configuration. So three things must agree: the certificate the webhook server presents (read from its
// certificate directory, which in a cluster is the volume of a Secret), the DNS name it is issued for, and the
// CA in the caBundle. Two modes decide who keeps them in agreement:
//
//   - self (the default): the manager does. It runs cert-controller's rotator
//     (github.com/open-policy-agent/cert-controller/pkg/rotator), which keeps a CA and a serving certificate
//     for <service>.<namespace>.svc (plus any extra names) in the Secret, renews them before they expire, waits
//     until the kubelet has mounted them into the certificate directory, and writes the CA into the caBundle of
//     the manager's webhook configurations (drover-<controller>-mutating/-validating of every controller
//     --controllers selects, Webhooks). The conversion injector (conversion.go) writes the same CA into the
//     CRDs whose conversion webhook the manager serves (kit.ConvertedCRDs), checking before each write that the CRD
//     still calls the manager's Service. Both run on every replica, not only on the leader: each replica
//     serves webhooks and must become ready by itself.
//   - external: cert-manager, or the user, fills the Secret and the caBundles. The manager never writes the
//     Secret nor a caBundle; it only waits until tls.crt and tls.key in the certificate directory form a key
//     pair whose certificate is valid for <service>.<namespace>.svc.
//
// The rotator updates the Secret but never creates it, and it fails at start when the Secret is missing. So in
// self mode Setup creates the Secret before the manager starts when it is missing, and a small runnable (on
// every replica, watching only that Secret) creates it again whenever it is deleted. The new Secret is seeded
// with the files currently mounted in the certificate directory (ca.crt, ca.key, tls.crt, tls.key, those
// present): the rotator then finds a valid CA and certificate, keeps them instead of issuing new ones, and
// injects the same CA again, so the certificate being served and the caBundle never disagree and admission
// keeps working. With nothing mounted yet the Secret is created empty and the rotator fills it. Nothing else is
// written and nothing is ever deleted.
//
// Setup returns a channel closed once the certificate is in place (self: the rotator's IsReady, closed when the
// files are mounted and the CA injected; external: the key pair is there and valid). The manager starts its
// controllers and registers its webhooks only then, and its readiness check fails until then: the webhook
// server cannot start without the files. docs/design/certificates.md describes the start-up order.
package certs
