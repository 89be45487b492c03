package example_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The generated Run passes runtime.WithTLS to every session: a lock and a
// queue work over a TLS client port that requires client certificates, and
// Run fails at once, with runtime.ErrTLSHandshake, for a certificate the
// server does not trust.
func TestGeneratedRunOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	certs := zktest.TLSCertsFor(t)
	srv := zktest.Start(t, zktest.WithTLS(certs, zktest.ClientAuthNeed))
	srv.RequireLocal(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	err := coord.Run(ctx, srv.TLSServers(), func(ctx context.Context, c *coord.Client) error {
		l := c.OrderLock(11)
		if err := l.Lock(ctx); err != nil {
			return err
		}
		if err := c.Jobs().Put(ctx, coord.Job{Name: "over-tls", Attempt: 1}); err != nil {
			return err
		}
		j, err := c.Jobs().Take(ctx)
		if err != nil {
			return err
		}
		if j.Name != "over-tls" {
			return errors.New("took " + j.Name)
		}
		return l.Unlock(ctx)
	}, runtime.WithTLS(certs.ClientConfig()))
	if err != nil {
		t.Fatalf("Run over TLS: %v", err)
	}

	err = coord.Run(ctx, srv.TLSServers(), func(ctx context.Context, c *coord.Client) error {
		t.Error("work ran on a refused client")
		return nil
	}, runtime.WithTLS(certs.UntrustedClientConfig()))
	if !errors.Is(err, runtime.ErrTLSHandshake) || ctx.Err() != nil {
		t.Fatalf("Run with an untrusted certificate = %v (ctx: %v)", err, ctx.Err())
	}
}
