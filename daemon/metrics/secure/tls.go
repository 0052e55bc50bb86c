package secure

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/util/cert"
)

// TLSConfig is the metrics server's TLS: the certificate and key in
// certFile and keyFile, read again whenever either file changes (a
// cert-manager renewal needs no restart); with neither, a self-signed
// certificate for host made at start, as kube-rbac-proxy and
// controller-runtime make one (the scraper then skips verification, as it
// does for them).
func TLSConfig(certFile, keyFile, host string) (*tls.Config, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("--metrics-tls-cert-file and --metrics-tls-key-file: give both or neither")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if certFile == "" {
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("making the metrics server's self-signed certificate: %w", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("loading the metrics server's self-signed certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
		return cfg, nil
	}
	f := &certFiles{cert: certFile, key: keyFile}
	if _, err := f.get(nil); err != nil {
		return nil, err
	}
	cfg.GetCertificate = f.get
	return cfg, nil
}

// certFiles is a key pair read from files, read again when either file's
// modification time or size changes.
type certFiles struct {
	cert, key string

	mu    sync.Mutex
	stamp [2]fileStamp
	pair  *tls.Certificate
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func (f *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var now [2]fileStamp
	for i, p := range []string{f.cert, f.key} {
		st, err := os.Stat(p)
		if err != nil {
			if f.pair != nil { // mid-rotation: keep serving the last good pair
				return f.pair, nil
			}
			return nil, fmt.Errorf("reading the metrics server's certificate: %w", err)
		}
		now[i] = fileStamp{mod: st.ModTime(), size: st.Size()}
	}
	if f.pair != nil && now == f.stamp {
		return f.pair, nil
	}
	pair, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		if f.pair != nil { // the two files written one after the other: the next handshake reads them again
			return f.pair, nil
		}
		return nil, fmt.Errorf("loading the metrics server's certificate %s and key %s: %w", f.cert, f.key, err)
	}
	f.pair, f.stamp = &pair, now
	return f.pair, nil
}
