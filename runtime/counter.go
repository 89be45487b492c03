package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Counter is a shared int64 in one persistent znode, stored as 8 bytes
// big-endian, the format of Curator's DistributedAtomicLong, so the two can
// share a counter. With WithLayout(LayoutKazoo) it is stored as 4 bytes
// big-endian, the format of Curator's SharedCount and of kazoo's
// Counter(support_curator=True), and holds only int32 values: an Add that
// would leave that range fails and writes nothing. A missing
// node (or one without data) counts as 0. Add is optimistic: read, then
// compare-and-set on the node's version, again until it wins.
type Counter struct {
	c *Config[int64]
}

type int64Codec struct{}

func (int64Codec) Encode(v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(v)), nil
}

func (int64Codec) Decode(data []byte) (int64, error) {
	switch len(data) {
	case 0:
		return 0, nil
	case 8:
		return int64(binary.BigEndian.Uint64(data)), nil
	}
	return 0, fmt.Errorf("%w: counter holds %d bytes, want 8", ErrDecode, len(data))
}

// int32Codec is the 4-byte format of SharedCount and kazoo's Counter.
type int32Codec struct{}

func (int32Codec) Encode(v int64) ([]byte, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return nil, fmt.Errorf("%d is out of the 32-bit range of the counter's layout (kazoo, SharedCount)", v)
	}
	return binary.BigEndian.AppendUint32(nil, uint32(int32(v))), nil
}

func (int32Codec) Decode(data []byte) (int64, error) {
	switch len(data) {
	case 0:
		return 0, nil
	case 4:
		return int64(int32(binary.BigEndian.Uint32(data))), nil
	}
	return 0, fmt.Errorf("%w: counter holds %d bytes, want 4 (layout kazoo)", ErrDecode, len(data))
}

// CounterCodec is the codec of a counter's value in layout: 8 bytes
// big-endian (LayoutCurator), or 4 (LayoutKazoo: encoding a value out of
// the int32 range fails). No data decodes as 0. A counter's cache is
// NewCache(tmpl, key, CounterCodec(layout)): its value per counter node.
func CounterCodec(layout Layout) Codec[int64] {
	if layout == LayoutKazoo {
		return int32Codec{}
	}
	return int64Codec{}
}

// NewCounter returns a handle on the counter node p. It does no I/O; the
// node and its parents are created on the first Add. If p is invalid, every
// method returns p's error. opts: WithNodeACL, WithLayout (LayoutKazoo: the
// 4-byte format).
func NewCounter(s *Session, p Path, opts ...HandleOption) *Counter {
	c := NewConfig[int64](s, p, CounterCodec(handleOptions(opts).layout), opts...)
	c.quiet = true
	return &Counter{c: c}
}

// Path returns the counter node's path.
func (k *Counter) Path() string { return k.c.path }

// Get returns the counter's value (0 when the node does not exist). It does
// not block beyond the read.
func (k *Counter) Get(ctx context.Context) (_ int64, err error) {
	defer telOf(k.c.s).begin(ctx, opCounterGet, "counter", k.c.name, k.c.path).end(&err)
	v, _, err := k.c.Get(ctx)
	if errors.Is(err, ErrNoValue) {
		return 0, nil
	}
	return v, err
}

// Add adds delta (which may be negative; wrapping past the int64 range is
// two's complement) and returns the new value. It retries its
// compare-and-set until no other writer got in between, or ctx ends.
//
// Success means delta was added exactly once. An error means delta was
// added at most once: ErrOutcomeUnknown (recoverable) says a connection
// loss hid whether the write took effect; an error from the session's or
// ctx's end may also come after the write was sent. Add never adds twice,
// so the counter always equals the sum of the successful Adds plus some of
// the failed ones; an application that must know reads the counter (or
// keeps its own record in the value it counts).
func (k *Counter) Add(ctx context.Context, delta int64) (_ int64, err error) {
	defer telOf(k.c.s).begin(ctx, opCounterAdd, "counter", k.c.name, k.c.path).end(&err)
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		cur, ver, err := k.c.Get(ctx)
		switch {
		case errors.Is(err, ErrNoValue):
			cur, ver = 0, NoVersion
		case err != nil:
			return 0, err
		}
		_, err = k.c.CompareAndSet(ctx, cur+delta, ver)
		if errors.Is(err, ErrVersionConflict) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return cur + delta, nil
	}
}
