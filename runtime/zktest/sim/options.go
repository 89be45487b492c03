package sim

import "time"

// Option configures a Server.
type Option func(*config)

type config struct {
	tick          time.Duration
	minSession    time.Duration
	maxSession    time.Duration
	ttl           bool // extended types: TTL nodes allowed
	checkInterval time.Duration
	maxBuffer     int
	faultSeed     uint64
	faultRate     float64
	faultLimit    int
	faultSkip     []string
	faultPlan     []Fault                        // WithFaultPlan
	steps         bool                           // WithSteps
	stepLog       func(step uint64, what string) // WithSteps
}

// The defaults are those of zktest's real servers: tickTime 200ms,
// sessions from 400ms to 60s, containers reaped every minute, TTL nodes
// refused, jute.maxbuffer 0xfffff.
func defaults() config {
	return config{tick: 200 * time.Millisecond, minSession: 400 * time.Millisecond, maxSession: 60 * time.Second,
		checkInterval: time.Minute, maxBuffer: 0xfffff}
}

// WithTTLNodes allows TTL nodes (ZooKeeper's
// zookeeper.extendedTypesEnabled=true) and reaps containers and expired
// TTL nodes every checkInterval (znode.container.checkIntervalMs).
func WithTTLNodes(checkInterval time.Duration) Option {
	return func(c *config) {
		c.ttl = true
		if checkInterval > 0 {
			c.checkInterval = checkInterval
		}
	}
}

// WithSessionTimeouts sets the range a client's session timeout is
// negotiated into.
func WithSessionTimeouts(min, max time.Duration) Option {
	return func(c *config) { c.minSession, c.maxSession = min, max }
}

// WithTickTime sets the server's tick: sessions are checked for expiry
// every half tick.
func WithTickTime(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.tick = d
		}
	}
}
