package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newGetCmd) }

func newGetCmd() *cobra.Command {
	f := &offloadFlags{}
	var out string
	var timings bool
	cmd := &cobra.Command{
		Use:   "get KEY",
		Short: "Read an offloaded object through its owner",
		Long: `get asks the master which owner keeps KEY, has that owner load the object
from object storage into its staging memory, and reads it with the transfer
engine. The bytes go to stdout, or to FILE with -o.

Exit codes: 0 done, 1 failed, 2 bad usage, 3 the key does not exist.`,
		Example: `  # Read a key into a file
  ferry get --master 10.0.0.1:50051 layer0/block17 -o block17.bin

  # With the master from the environment, to stdout, with stage timings
  MOONCAKE_MASTER=10.0.0.1:50051 ferry get layer0/block17 --timings > block17.bin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd, f, args[0], out, timings)
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the object to this file instead of stdout")
	cmd.Flags().BoolVar(&timings, "timings", false, "print the stage timings on stderr")
	return cmd
}

func runGet(cmd *cobra.Command, f *offloadFlags, key, out string, timings bool) error {
	r, err := newRequester(cmd, f)
	if err != nil {
		return err
	}
	defer r.close()
	ctx := cmdContext(cmd)
	reps, err := r.cl.Stat(ctx, [][]byte{[]byte(key)})
	if err != nil {
		return err
	}
	if reps[0].Err != nil {
		return keyErr(key, reps[0].Err)
	}
	buf, dst, err := r.buffer(reps[0].Size)
	if err != nil {
		return err
	}
	defer buf.Close()
	res := r.cl.Get(ctx, [][]byte{[]byte(key)}, [][]byte{dst})[0]
	if res.Err != nil {
		return keyErr(key, res.Err)
	}
	var w io.Writer = cmd.OutOrStdout()
	if out != "" {
		fh, err := os.Create(out)
		if err != nil {
			return err
		}
		defer fh.Close()
		w = fh
	}
	if _, err := w.Write(dst[:res.Size]); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if fh, ok := w.(*os.File); ok && out != "" {
		if err := fh.Close(); err != nil {
			return err
		}
	}
	if timings {
		t := res.Timings
		fmt.Fprintf(cmd.ErrOrStderr(), "%d bytes from %s: master %v, owner load %v, transfer %v, total %v\n",
			res.Size, res.Owner, t.Master, t.Owner, t.Transfer, t.Total)
	}
	return nil
}
