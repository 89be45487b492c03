package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/internal/graph"
)

func (a *app) graphCommand() *cobra.Command {
	var specPath, format string
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Draw the declared topology (Mermaid or Graphviz DOT)",
		Long: `Print the coordination topology the spec declares as a picture source:
resources grouped by the first segment of their path under the root, each
with its kind, path layout (with typed parameters) and the settings that
shape it: leases, sizes, priorities, participants, payload types,
revocation, node layout.

--format mermaid (the default) prints a Mermaid flowchart, which GitHub and
many editors render in a markdown code block; --format dot prints Graphviz
DOT for 'dot -Tsvg'. Only the spec is read: kinds not generated yet are
drawn too.`,
		Example: `  zkgen graph > topology.mmd
  zkgen graph --format dot -f svc/zkgen.yaml | dot -Tsvg > topology.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := parseSpec(filepath.Clean(specPath))
			if err != nil {
				return err
			}
			var out string
			switch format {
			case "mermaid":
				out = graph.Mermaid(s)
			case "dot":
				out = graph.DOT(s)
			default:
				return userErrorf("unknown --format %q (want mermaid or dot)", format)
			}
			if _, err := fmt.Fprint(a.stdout, out); err != nil {
				return internalErrorf("write graph: %v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&specPath, "file", "f", defaultSpec, "spec file to read")
	cmd.Flags().StringVar(&format, "format", "mermaid", "output format: mermaid or dot")
	return cmd
}
