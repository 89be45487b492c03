package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/internal/inspect"
)

// provisionLong is the command's help.
const provisionLong = `Create, as persistent nodes, the root and every resource's literal path up
to its first parameter (its whole path when it has none; for barriers,
configs, counters and two-phase commits, whose node's existence is state,
only its parent). Existing nodes are left alone, so provision is idempotent.
Then walk the tree under the root and report the nodes no declared
resource explains (the top of each unknown subtree).

--dry-run creates nothing and prints what would be created. --strict exits
1 when there are unknown nodes, so CI fails on them (they are still listed;
without --strict they are reported and the exit status is 0). New nodes get
the declared acl (a resource's own for nodes only it uses, the top-level one
for shared nodes; the open ACL when none is declared); existing nodes keep
theirs.`

func (a *app) provisionCommand() *cobra.Command {
	var f liveFlags
	var dryRun bool
	var strict bool
	cmd := &cobra.Command{
		Use:   "provision",
		Short: "Create the spec's persistent parent nodes; report nodes the spec does not know",
		Long:  provisionLong,
		Example: `  zkgen provision --dry-run
  zkgen provision --strict --dry-run   # in CI: fail on nodes the spec does not know
  zkgen provision --servers zk1:2181`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := context.Background()
			s, sess, err := a.connect(ctx, &f)
			if err != nil {
				return err
			}
			defer sess.Close()
			pl, perr := inspect.Provision(ctx, sess, s, dryRun)
			verb := "created"
			if dryRun {
				verb = "would create"
			}
			var b strings.Builder
			for _, p := range pl.Created {
				fmt.Fprintf(&b, "%s %s\n", verb, p)
			}
			if perr == nil {
				if len(pl.Created) == 0 {
					fmt.Fprintf(&b, "all %d parent nodes exist\n", len(pl.Needed))
				}
				for _, p := range pl.Unknown {
					fmt.Fprintf(&b, "unknown %s\n", p)
				}
			}
			if err := write(a.stdout, b.String()); err != nil {
				return err
			}
			if perr != nil {
				return zkFailure("provision", perr)
			}
			if strict && len(pl.Unknown) > 0 {
				return userErrorf("%d node(s) under %s that the spec does not declare (--strict)", len(pl.Unknown), s.RootPath())
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when there are nodes the spec does not declare (for CI)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "create nothing; print what would be created")
	return cmd
}
