package cli

import "github.com/spf13/cobra"

func (a *app) validateCommand() *cobra.Command {
	var specPath string
	var allowOutside bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the spec and print every error",
		Long: `Parse and validate the spec and run the code generator on it without
writing anything, so that everything generate would reject is reported,
including resource kinds the generator does not support yet.

Prints nothing and exits 0 when the spec is valid. Otherwise prints every
error, sorted by position, one per line as file:line:col: field: message,
and exits 1.`,
		Example: `  zkgen validate
  zkgen validate -f svc/zkgen.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := a.load(specPath, allowOutside)
			return err
		},
	}
	cmd.Flags().StringVarP(&specPath, "file", "f", defaultSpec, "spec file to read")
	allowOutsideFlag(cmd, &allowOutside)
	return cmd
}
