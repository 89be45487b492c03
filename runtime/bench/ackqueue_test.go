package bench

import (
	"context"
	"strconv"
	"testing"

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
	var put, take []*runtime.AckQueue[[]byte]
	for i := 0; i < producers; i++ {
		put = append(put, runtime.NewAckQueue(session(b, px.Addr()), runtime.At(path), runtime.BytesCodec()))
	}
	for j := 0; j < consumers; j++ {
		take = append(take, runtime.NewAckQueue(session(b, px.Addr()), runtime.At(path), runtime.BytesCodec()))
	}
	bg := context.Background()
	if err := put[0].Put(bg, payload); err != nil { // parents, outside the timing
		b.Fatal(err)
	}
	if d, err := take[0].Take(bg); err != nil || d.Ack(bg) != nil {
		b.Fatal("first item", err)
	}
	px.ResetCounts()
	b.ReportAllocs()
	queueRun(b, func(i, n int) error {
		for k := 0; k < n; k++ {
			if err := put[i].Put(bg, payload); err != nil {
				return err
			}
		}
		return nil
	}, func(j int, ctx context.Context) (int, error) {
		d, err := take[j].Take(ctx)
		if err != nil {
			return 0, err
		}
		return 1, d.Ack(bg)
	})
	report(b, px, b.N)
}
