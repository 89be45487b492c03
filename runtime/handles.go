package runtime

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
)

// The handle interfaces: one per kind, with the full method set of the
// handle type, so that application code can take an interface and a unit
// test can pass a fake without ZooKeeper. Generated code names one per
// resource (OrderLockHandle = runtime.LockHandle, ...) and its Client
// returns them. Values a handle hands out (*Lease, *Leadership,
// *Membership, *Assignment, *Delivery, *TTLLease) stay concrete: a fake
// returns real ones from package runtimetest.

// RWLockHandle is the method set of *RWLock.
type RWLockHandle interface {
	Path() string
	Read() LockHandle
	Write() LockHandle
}

// SemaphoreHandle is the method set of *Semaphore.
type SemaphoreHandle interface {
	Path() string
	SetPurpose(purpose string)
	Acquire(ctx context.Context) (*Lease, error)
	TryAcquire(ctx context.Context) (*Lease, bool, error)
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Lost() <-chan struct{}
	Holders(ctx context.Context) ([]Holder, error)
	Reap(ctx context.Context, olderThan time.Duration) ([]Holder, error)
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}

// TTLLeasesHandle is the method set of *TTLLeases.
type TTLLeasesHandle interface {
	Path() string
	TTL() time.Duration
	Acquire(ctx context.Context, holder string) (*TTLLease, error)
	Holders(ctx context.Context) ([]LeaseHolder, error)
}

// QueueHandle is the method set of *Queue[T].
type QueueHandle[T any] interface {
	Path() string
	Put(ctx context.Context, item T) error
	PutAll(ctx context.Context, items []T) (int, error)
	Take(ctx context.Context) (T, error)
	TakeN(ctx context.Context, n int) ([]T, error)
	Peek(ctx context.Context) (T, bool, error)
	Len(ctx context.Context) (int, error)
	Stats(ctx context.Context) (QueueStats, error)
}

// AckQueueHandle is the method set of *AckQueue[T].
type AckQueueHandle[T any] interface {
	Path() string
	Put(ctx context.Context, item T) error
	PutAll(ctx context.Context, items []T) (int, error)
	Take(ctx context.Context) (*Delivery[T], error)
	TakeN(ctx context.Context, n int) ([]*Delivery[T], error)
	Peek(ctx context.Context) (T, bool, error)
	Len(ctx context.Context) (int, error)
	Stats(ctx context.Context) (QueueStats, error)
	DeadLetters(ctx context.Context) ([]*DeadLetter[T], error)
	Claims(ctx context.Context) ([]Claim, error)
	Consume(ctx context.Context, fn func(ctx context.Context, item T) error, opts ...ConsumeOption) error
}

// PriorityQueueHandle is the method set of *PriorityQueue[T].
type PriorityQueueHandle[T any] interface {
	Path() string
	Put(ctx context.Context, p Priority, item T) error
	PutAll(ctx context.Context, p Priority, items []T) (int, error)
	Take(ctx context.Context) (T, error)
	TakeN(ctx context.Context, n int) ([]T, error)
	Peek(ctx context.Context) (T, bool, error)
	Len(ctx context.Context) (int, error)
	Stats(ctx context.Context) (QueueStats, error)
}

// AckPriorityQueueHandle is the method set of *AckPriorityQueue[T].
type AckPriorityQueueHandle[T any] interface {
	Path() string
	Put(ctx context.Context, p Priority, item T) error
	PutAll(ctx context.Context, p Priority, items []T) (int, error)
	Take(ctx context.Context) (*Delivery[T], error)
	TakeN(ctx context.Context, n int) ([]*Delivery[T], error)
	Peek(ctx context.Context) (T, bool, error)
	Len(ctx context.Context) (int, error)
	Stats(ctx context.Context) (QueueStats, error)
	DeadLetters(ctx context.Context) ([]*DeadLetter[T], error)
	Claims(ctx context.Context) ([]Claim, error)
	Consume(ctx context.Context, fn func(ctx context.Context, item T) error, opts ...ConsumeOption) error
}

// DelayQueueHandle is the method set of *DelayQueue[T].
type DelayQueueHandle[T any] interface {
	Path() string
	Put(ctx context.Context, item T, due time.Time) error
	PutAll(ctx context.Context, items []T, due time.Time) (int, error)
	Take(ctx context.Context) (T, error)
	TakeN(ctx context.Context, n int) ([]T, error)
	Peek(ctx context.Context) (T, bool, error)
	Len(ctx context.Context) (int, error)
	Stats(ctx context.Context) (QueueStats, error)
}

// AckDelayQueueHandle is the method set of *AckDelayQueue[T].
type AckDelayQueueHandle[T any] interface {
	Path() string
	Put(ctx context.Context, item T, due time.Time) error
	PutAll(ctx context.Context, items []T, due time.Time) (int, error)
	Take(ctx context.Context) (*Delivery[T], error)
	TakeN(ctx context.Context, n int) ([]*Delivery[T], error)
	Peek(ctx context.Context) (T, bool, error)
	Len(ctx context.Context) (int, error)
	Stats(ctx context.Context) (QueueStats, error)
	DeadLetters(ctx context.Context) ([]*DeadLetter[T], error)
	Claims(ctx context.Context) ([]Claim, error)
	Consume(ctx context.Context, fn func(ctx context.Context, item T) error, opts ...ConsumeOption) error
}

// BarrierHandle is the method set of *Barrier.
type BarrierHandle interface {
	Path() string
	Raise(ctx context.Context) error
	Lower(ctx context.Context) error
	Wait(ctx context.Context) error
}

// DoubleBarrierHandle is the method set of *DoubleBarrier.
type DoubleBarrierHandle interface {
	Path() string
	Node() string
	Enter(ctx context.Context) error
	Leave(ctx context.Context) error
}

// ElectionHandle is the method set of *Election[T].
type ElectionHandle[T any] interface {
	Path() string
	Campaign(ctx context.Context, payload T) (*Leadership[T], error)
	Run(ctx context.Context, payload T, fn func(ctx context.Context, l *Leadership[T]) error) error
	Leader(ctx context.Context) (T, error)
	State(ctx context.Context) (LeaderState[T], error)
	Observe(ctx context.Context) <-chan LeaderState[T]
}

// GroupHandle is the method set of *Group[T].
type GroupHandle[T any] interface {
	Path() string
	Join(ctx context.Context, member T) (*Membership[T], error)
	Stay(ctx context.Context, member T) error
	Members(ctx context.Context) ([]T, error)
	Watch(ctx context.Context) <-chan MemberList[T]
}

// PartitionerHandle is the method set of *Partitioner[T].
type PartitionerHandle[T any] interface {
	Path() string
	Partitions() int
	Name(i int) string
	Join(ctx context.Context, member T, opts ...JoinOption) (*Assignment[T], error)
	Stay(ctx context.Context, member T, opts ...JoinOption) error
	Owners(ctx context.Context) (PartitionOwners[T], error)
	Owns(i int) bool
	Token(i int) int64
	Guarded(ctx context.Context, i int, ops ...any) ([]zk.MultiResponse, error)
}

// ConfigHandle is the method set of *Config[T].
type ConfigHandle[T any] interface {
	Path() string
	Get(ctx context.Context) (T, Version, error)
	Set(ctx context.Context, v T) (Version, error)
	CompareAndSet(ctx context.Context, v T, ver Version) (Version, error)
	Delete(ctx context.Context) error
	Watch(ctx context.Context) <-chan Versioned[T]
}

// CounterHandle is the method set of *Counter.
type CounterHandle interface {
	Path() string
	Get(ctx context.Context) (int64, error)
	Add(ctx context.Context, delta int64) (int64, error)
}

// TwoPhaseCommitHandle is the method set of *TwoPhaseCommit[T].
type TwoPhaseCommitHandle[T any] interface {
	Path() string
	Participants() []Participant
	Propose(ctx context.Context) error
	ProposeWith(ctx context.Context, payload T) error
	Payload(ctx context.Context) (T, error)
	Join(ctx context.Context, p Participant) error
	Vote(ctx context.Context, p Participant, d Decision) error
	Outcome(ctx context.Context) (Decision, error)
	Coordinate(ctx context.Context) (Decision, error)
	ForceAbort(ctx context.Context) (Decision, error)
	Remove(ctx context.Context) error
}

// The handle types implement their interfaces.
var (
	_ LockHandle                   = (*Lock)(nil)
	_ RWLockHandle                 = (*RWLock)(nil)
	_ SemaphoreHandle              = (*Semaphore)(nil)
	_ TTLLeasesHandle              = (*TTLLeases)(nil)
	_ QueueHandle[int]             = (*Queue[int])(nil)
	_ AckQueueHandle[int]          = (*AckQueue[int])(nil)
	_ PriorityQueueHandle[int]     = (*PriorityQueue[int])(nil)
	_ AckPriorityQueueHandle[int]  = (*AckPriorityQueue[int])(nil)
	_ DelayQueueHandle[int]        = (*DelayQueue[int])(nil)
	_ AckDelayQueueHandle[int]     = (*AckDelayQueue[int])(nil)
	_ BarrierHandle                = (*Barrier)(nil)
	_ DoubleBarrierHandle          = (*DoubleBarrier)(nil)
	_ ElectionHandle[int]          = (*Election[int])(nil)
	_ GroupHandle[int]             = (*Group[int])(nil)
	_ PartitionerHandle[int]       = (*Partitioner[int])(nil)
	_ ConfigHandle[int]            = (*Config[int])(nil)
	_ CounterHandle                = (*Counter)(nil)
	_ TwoPhaseCommitHandle[[]byte] = (*TwoPhaseCommit[[]byte])(nil)
	_ Locker                       = LockHandle(nil)
	_ Locker                       = SemaphoreHandle(nil)
)
