package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// subcommands holds the constructors of every subcommand; each command's
// file adds itself in an init function.
var subcommands []func() *cobra.Command

var logFormat, logLevel string

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "ferry",
		Short: "Ferry moves KV-cache objects between inference nodes over RDMA or TCP",
		Long: `Ferry is a transfer engine for LLM inference clusters. It moves KV-cache
objects between machines over RDMA verbs with a TCP fallback, speaks
Mooncake's Transfer Engine wire formats in P2PHANDSHAKE mode, and serves
objects kept in OSS or S3 through offload owners.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return setupLogging()
		},
	}
	root.PersistentFlags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	for _, mk := range subcommands {
		root.AddCommand(mk())
	}
	return root
}

func setupLogging() error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(strings.ToLower(logLevel))); err != nil {
		return usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", logLevel)}
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	switch logFormat {
	case "text":
		h = slog.NewTextHandler(os.Stderr, opts)
	case "json":
		h = slog.NewJSONHandler(os.Stderr, opts)
	default:
		return usageError{fmt.Errorf("--log-format %q: want text or json", logFormat)}
	}
	slog.SetDefault(slog.New(h))
	return nil
}
