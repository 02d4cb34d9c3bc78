package main

import (
	"context"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ferrylabs/ferry/offload/client"
)

func init() { subcommands = append(subcommands, newLsCmd) }

func newLsCmd() *cobra.Command {
	f := &offloadFlags{}
	cmd := &cobra.Command{
		Use:   "ls [PREFIX]",
		Short: "List offloaded keys known to the master",
		Long: `ls prints the tenant's keys that start with PREFIX, one per line as
"SIZE<TAB>KEY", in key order. Keys with control or invalid UTF-8 bytes are
printed Go-quoted.`,
		Example: `  ferry ls --master 10.0.0.1:50051
  ferry ls --tenant team-a layer0/`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prefix := ""
			if len(args) == 1 {
				prefix = args[0]
			}
			return runLs(cmd, f, prefix)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

func printableKey(k []byte) string {
	if !utf8.Valid(k) {
		return strconv.Quote(string(k))
	}
	for _, r := range string(k) {
		if !unicode.IsPrint(r) {
			return strconv.Quote(string(k))
		}
	}
	return string(k)
}

func runLs(cmd *cobra.Command, f *offloadFlags, prefix string) error {
	c, err := f.load(cmd)
	if err != nil {
		return err
	}
	conn, closer, err := client.DialMaster(c.MasterAddress, c)
	if err != nil {
		return fmt.Errorf("master %s: %w", c.MasterAddress, err)
	}
	defer closer.Close()
	ctx, cancel := context.WithTimeout(cmdContext(cmd), c.RPCTimeout)
	defer cancel()
	keys, err := client.NewMasterClient(conn).List(ctx, c.TenantID, []byte(prefix))
	if err != nil {
		return fmt.Errorf("list at master %s: %w", c.MasterAddress, err)
	}
	w := cmd.OutOrStdout()
	for _, k := range keys {
		fmt.Fprintf(w, "%d\t%s\n", k.Size, printableKey(k.Key))
	}
	return nil
}
