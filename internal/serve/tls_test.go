package serve_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// serve takes the live commands' TLS flags: it follows a server that
// requires client certificates over TLS, and one that refuses its
// certificate shows as an outage saying why, not as an exit or an empty
// topology.
func TestServeOverTLS(t *testing.T) {
	certs := zktest.TLSCertsFor(t)
	srv := zktest.Start(t, zktest.WithTLS(certs, zktest.ClientAuthNeed))
	srv.RequireLocal(t)
	tlsFlags := []string{"--tls-ca=" + certs.CAFile, "--tls-cert=" + certs.ClientCertFile, "--tls-key=" + certs.ClientKeyFile}
	out, err := exec.Command(zkgenBinary(t), append([]string{"provision", "-f", exampleSpec, "--servers", srv.TLSAddr()}, tlsFlags...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("zkgen provision over TLS: %v\n%s", err, out)
	}
	base := startServe(t, srv.TLSAddr(), tlsFlags...)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exampleClient(t, ctx, srv.Servers()) // the plain port
	if _, err := c.Hits().Add(ctx, 7); err != nil {
		t.Fatal(err)
	}
	awaitState(t, base, func(st apiState) bool { return st.Up && st.counter("hits") == 7 })

	refused := startServe(t, srv.TLSAddr(), "--tls-ca="+certs.CAFile, "--tls-cert="+certs.UntrustedCertFile, "--tls-key="+certs.UntrustedKeyFile)
	awaitState(t, refused, func(st apiState) bool {
		return !st.Up && st.Outage != nil && strings.Contains(st.Outage.Reason, "TLS handshake failed")
	})
}
