// Package zkresolver is a gRPC name resolver over zkgen's service
// discovery (runtime.Services): a client dialing "zk:///payments" gets
// the address:port of every available instance of the service payments
// (registered, enabled), and the new list after every change, so that
// grpc.NewClient balances over the live instances and follows their
// registrations. It is a module of its own: the zkgen runtime does not
// depend on gRPC; only the programs that import this package do.
package zkresolver

import (
	"context"
	"net"
	"strconv"

	"google.golang.org/grpc/resolver"

	"github.com/zkgen/zkgen/runtime"
)

// Scheme is the target scheme the builder resolves: zk:///<service name>.
const Scheme = "zk"

// NewBuilder returns a resolver builder for the services of d. Pass it to
// grpc.NewClient with grpc.WithResolvers. d must be running (Run, under
// Supervise): the resolver reads d's cache and follows its changes; it
// writes nothing to ZooKeeper.
func NewBuilder[T any](d *runtime.Services[T]) resolver.Builder {
	return &builder[T]{d: d}
}

type builder[T any] struct{ d *runtime.Services[T] }

// Scheme returns Scheme.
func (b *builder[T]) Scheme() string { return Scheme }

// Build starts following the service the target names; the resolver
// stops with Close.
func (b *builder[T]) Build(target resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &zkResolver{cancel: cancel, done: make(chan struct{})}
	name := target.Endpoint()
	p := b.d.Provider(name, runtime.RoundRobin, 0)
	changes := b.d.Changes(ctx, name)
	go func() {
		defer close(r.done)
		for ev := range changes {
			if ev.Kind == runtime.CacheGap {
				continue // keep the last list until the resync
			}
			all, err := p.Available()
			if err != nil {
				cc.ReportError(err)
				continue
			}
			_ = cc.UpdateState(resolver.State{Addresses: addresses(all)})
		}
	}()
	return r, nil
}

// addresses are the instances' host:port (the SSL port when no port).
func addresses[T any](all []runtime.ServiceInstance[T]) []resolver.Address {
	out := make([]resolver.Address, 0, len(all))
	for _, in := range all {
		port := in.Port
		if port == 0 {
			port = in.SSLPort
		}
		if in.Address == "" || port == 0 {
			continue
		}
		out = append(out, resolver.Address{Addr: net.JoinHostPort(in.Address, strconv.Itoa(port))})
	}
	return out
}

type zkResolver struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// ResolveNow does nothing: the list follows the cache's changes.
func (*zkResolver) ResolveNow(resolver.ResolveNowOptions) {}

// Close stops following the service and waits for the resolver's
// goroutine.
func (r *zkResolver) Close() {
	r.cancel()
	<-r.done
}
