package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The live commands speak TLS with --tls-ca, --tls-cert and --tls-key (or
// ZK_TLS_CA, ZK_TLS_CERT, ZK_TLS_KEY) to a server that requires client
// certificates, and fail at once, saying why, when the server refuses them.
func TestLiveCommandsTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	certs := zktest.TLSCertsFor(t)
	srv := zktest.Start(t, zktest.WithTLS(certs, zktest.ClientAuthNeed))
	srv.RequireLocal(t)
	chdirTemp(t)
	root, src := liveSpec(t)
	writeFile(t, "zkgen.yaml", src)
	servers := "--servers=" + srv.TLSAddr()
	ca, cert, key := "--tls-ca="+certs.CAFile, "--tls-cert="+certs.ClientCertFile, "--tls-key="+certs.ClientKeyFile

	r := zkgen(t, "provision", servers, ca, cert, key)
	r.want(t, ExitOK, nil, empty)
	if !strings.HasPrefix(r.stdout, "created "+root+"\n") {
		t.Fatalf("provision over TLS:\n%s", r.stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := runtime.Connect(ctx, srv.Servers()) // the plain port sees what provision made
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ok, err := s.Exists(ctx, root+"/queues/jobs"); !ok || err != nil {
		t.Fatalf("%s/queues/jobs after provision over TLS: %v, %v", root, ok, err)
	}

	t.Run("env", func(t *testing.T) {
		t.Setenv(envTLSCA, certs.CAFile)
		t.Setenv(envTLSCert, certs.ClientCertFile)
		t.Setenv(envTLSKey, certs.ClientKeyFile)
		t.Setenv("ZK_SERVERS", srv.TLSAddr())
		r := zkgen(t, "inspect", "--json")
		r.want(t, ExitOK, nil, empty)
		if !strings.Contains(r.stdout, root+"/queues/jobs") {
			t.Errorf("inspect over TLS from the environment:\n%s", r.stdout)
		}
	})

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"untrusted certificate", []string{ca, "--tls-cert=" + certs.UntrustedCertFile, "--tls-key=" + certs.UntrustedKeyFile}, "TLS handshake failed"},
		{"no certificate", []string{ca}, "bad certificate"},
		{"plain", nil, "speaks TLS"},
		{"certificate without key", []string{ca, cert}, "--tls-cert needs --tls-key"},
		{"missing CA file", []string{"--tls-ca=nope.pem"}, "--tls-ca: open nope.pem"},
		{"CA file without PEM", []string{"--tls-ca=zkgen.yaml"}, "no PEM certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := zkgen(t, append([]string{"provision", servers, "--timeout=30s"}, c.args...)...)
			if r.code != ExitFailure || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, ExitFailure, c.want)
			}
			if strings.Contains(r.stderr, "within 30s") {
				t.Fatalf("waited out the timeout: %s", r.stderr)
			}
		})
	}
}
