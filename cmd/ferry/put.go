package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newPutCmd) }

func newPutCmd() *cobra.Command {
	f := &offloadFlags{}
	var timings bool
	cmd := &cobra.Command{
		Use:   "put KEY FILE",
		Short: "Store FILE as KEY through an offload owner",
		Long: `put asks the master to place KEY on an owner with room, writes FILE into
that owner's staging memory with the transfer engine, and commits: the owner
uploads the object to its object store and records it at the master. FILE "-"
reads stdin.`,
		Example: `  # Store a file
  ferry put --master 10.0.0.1:50051 layer0/block17 block17.bin

  # Store stdin, in tenant "team-a"
  cat block17.bin | ferry put --tenant team-a layer0/block17 -`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return runPut(cmd, f, args[0], args[1], timings) },
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&timings, "timings", false, "print the stage timings on stderr")
	return cmd
}

func runPut(cmd *cobra.Command, f *offloadFlags, key, file string, timings bool) error {
	// A regular file is read straight into registered memory; stdin is
	// read whole first, since its size is unknown.
	var data []byte
	var fh *os.File
	var size int64
	if file == "-" {
		var err error
		if data, err = io.ReadAll(cmd.InOrStdin()); err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		size = int64(len(data))
	} else {
		var err error
		if fh, err = os.Open(file); err != nil {
			return usageError{err}
		}
		defer fh.Close()
		st, err := fh.Stat()
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return usageError{fmt.Errorf("%s is not a regular file (use - for stdin)", file)}
		}
		size = st.Size()
	}
	r, err := newRequester(cmd, f)
	if err != nil {
		return err
	}
	defer r.close()
	buf, src, err := r.buffer(size)
	if err != nil {
		return err
	}
	defer buf.Close()
	if fh != nil {
		if _, err := io.ReadFull(fh, src); err != nil {
			return fmt.Errorf("read %s: %w", file, err)
		}
	} else {
		copy(src, data)
	}
	res := r.cl.Put(cmdContext(cmd), [][]byte{[]byte(key)}, [][]byte{src})[0]
	if res.Err != nil {
		return keyErr(key, res.Err)
	}
	if timings {
		t := res.Timings
		fmt.Fprintf(cmd.ErrOrStderr(), "%d bytes to %s: master %v, owner %v, transfer %v, commit %v, total %v\n",
			res.Size, res.Owner, t.Master, t.Owner, t.Transfer, t.Commit, t.Total)
	}
	return nil
}
