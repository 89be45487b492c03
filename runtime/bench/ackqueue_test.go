package bench

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
)

// Four producers and four consumers on separate sessions on an
// at-least-once queue: one item per Put, and per Take followed by Ack;
// b.N items in total, for each item size. What a delivery costs: its claim
// (a multi that also counts the delivery in the item's attempts node), the
// read that verifies the item, and the Ack's multi. The at-least-once peers
// run the same: kazoo's LockingQueue (get, then consume) and Curator's
// DistributedQueue with a lock path.
func BenchmarkAckQueue4P4C(b *testing.B) {
	for _, size := range itemSizes {
		b.Run("size="+strconv.Itoa(size), func(b *testing.B) {
			b.Run("impl=zkgen", func(b *testing.B) { ackQueue4P4C(b, jsonItem(size)) })
			b.Run("impl=zkgen-generated", func(b *testing.B) { ackQueueGenerated(b, size) })
			for _, impl := range peers {
				workload, extra := "queue", "lock_path=1"
				if impl.name == "kazoo" {
					workload, extra = "lockingqueue", "depth=0"
				}
				b.Run("impl="+impl.name, func(b *testing.B) {
					peerRun(b, impl, workload, "items/sec", "producers="+strconv.Itoa(producers),
						"consumers="+strconv.Itoa(consumers), "item_bytes="+strconv.Itoa(size), extra)
				})
			}
		})
	}
}

func ackQueue4P4C(b *testing.B, payload []byte) {
	px, path := setup(b)
	oneByOne(b, px, func(s *runtime.Session) ends {
		q := runtime.NewAckQueue(s, runtime.At(path), runtime.BytesCodec())
		return ends{
			put:  func(ctx context.Context, _ int) error { return q.Put(ctx, payload) },
			take: func(ctx context.Context) (int, error) { return takeAck(q.Take(ctx)) },
		}
	})
}

// takeAck acks a delivery just taken: one item taken, whatever the ack
// says.
func takeAck[T any](d *runtime.Delivery[T], err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return 1, d.Ack(context.Background())
}

// ackQueueGenerated is ackQueue4P4C through the example's generated
// client, as a user writes it: c.Outbox().Put and c.Outbox().Take, a new
// handle at each call, JSON Job items of exactly size bytes, on the
// example's own path (emptied first).
func ackQueueGenerated(b *testing.B, size int) {
	px, _ := setup(b)
	deleteTree(b, session(b, px.Addr()).Conn(), "/zkgen-example/queues/outbox")
	job := coord.Job{Name: strings.Repeat("x", max(0, size-len(`{"name":"","attempt":0}`)))}
	oneByOne(b, px, func(s *runtime.Session) ends {
		c := coord.New(s)
		return ends{
			put:  func(ctx context.Context, _ int) error { return c.Outbox().Put(ctx, job) },
			take: func(ctx context.Context) (int, error) { return takeAck(c.Outbox().Take(ctx)) },
		}
	})
}

// deleteTree deletes path and everything below it, if it exists.
func deleteTree(b *testing.B, c *zk.Conn, path string) {
	b.Helper()
	kids, _, err := c.Children(path)
	if err == zk.ErrNoNode {
		return
	}
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range kids {
		deleteTree(b, c, path+"/"+k)
	}
	if err := c.Delete(path, -1); err != nil && err != zk.ErrNoNode {
		b.Fatal(err)
	}
}
