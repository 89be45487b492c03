package cli

import (
	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/spec"
)

func (a *app) schemaCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the spec format",
		Long: `Print the JSON Schema (draft 2020-12) of the zkgen spec format, the one
embedded in this binary. Editors with the YAML language server complete and
check a spec that starts with the modeline 'zkgen init' writes:

  # yaml-language-server: $schema=` + SchemaURL + `

or, offline, with a local copy:

  zkgen schema > zkgen.schema.json
  # yaml-language-server: $schema=./zkgen.schema.json

zkgen validate checks more than a schema can: overlapping paths, names
that collide in Go, recursive types.`,
		Example: `  zkgen schema > zkgen.schema.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := a.stdout.Write(spec.SchemaJSON); err != nil {
				return internalErrorf("write schema: %v", err)
			}
			return nil
		},
	}
}
