package golden

import (
	"testing"

	tx "github.com/zkgen/zkgen/golden/election_group_config"
	"github.com/zkgen/zkgen/runtime"
)

// With notify: coordinator only the coordinator watches the votes and
// publishes the decision. The coordinator is the session that proposed,
// whichever of its handles asks: written the natural way, with a new
// handle per call, Outcome after Propose coordinates (it waited forever
// when only the proposing handle itself counted).
func TestHandlePerCallCoordinatorNotify(t *testing.T) {
	ctx, sess := zkSession(t)
	c := tx.New(sess)
	if err := c.Migrate(1).Propose(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []runtime.Participant{tx.MigratePrimaryDb, tx.MigrateReplicaDb} {
		if err := c.Migrate(1).Vote(ctx, p, runtime.Commit); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := c.Migrate(1).Outcome(ctx); d != runtime.Commit || err != nil {
		t.Fatalf("Outcome through a new handle = %v, %v", d, err)
	}
	if err := c.Migrate(1).Remove(ctx); err != nil {
		t.Fatal(err)
	}
}
