package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferrylabs/ferry/engine/metadata/httpstore"
)

func init() { subcommands = append(subcommands, newMetaServerCmd) }

// metaServerFlags follow Mooncake's example/http-metadata-server (--addr)
// plus the path the engines' "http://host:port/path" URL names.
type metaServerFlags struct {
	addr string
	path string
}

func newMetaServerCmd() *cobra.Command {
	f := &metaServerFlags{}
	cmd := &cobra.Command{
		Use:   "metadata-server",
		Short: "Run an in-memory HTTP metadata server for engines not in P2PHANDSHAKE mode",
		Long: `metadata-server serves Mooncake's HTTP metadata protocol from memory:
GET, PUT and DELETE of <path>?key=<key>, the JSON value as the body, 404
for a missing key. Engines started with the metadata server string
"http://<host>:<port><path>" publish their rpc_meta and segment keys here.
PUT bodies over 64 MiB are refused with 413. Nothing is persisted: a
restart forgets every key.

As Mooncake's server: MC_METADATA_HTTP_TOKEN requires every request to
carry "Authorization: Bearer <token>" (engines send it when the same
variable is set); MC_METADATA_MAX_KEYS (65536) and
MC_METADATA_MAX_TOTAL_BYTES (1 GiB) bound what it holds (507 beyond);
an rpc_meta key may only be rewritten with the same value.

The listen URL is printed on stdout once the server accepts connections.
SIGINT or SIGTERM stops it: requests in flight get 5 s to finish.`,
		Example: `  # On the default address :8080, path /metadata
  ferry metadata-server

  # Loopback only, any free port (the URL is printed on stdout)
  ferry metadata-server --addr 127.0.0.1:0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMetaServer(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", ":8080", "listen address host:port (port 0: any free port)")
	fl.StringVar(&f.path, "path", "/metadata", "URL path of the metadata endpoint")
	return cmd
}

func (f *metaServerFlags) check() error {
	if _, _, err := net.SplitHostPort(f.addr); err != nil {
		return fmt.Errorf("--addr %q: want host:port or :port: %w", f.addr, err)
	}
	if !strings.HasPrefix(f.path, "/") || strings.ContainsAny(f.path, "?# ") {
		return fmt.Errorf("--path %q: want an absolute URL path like /metadata, without query or spaces", f.path)
	}
	return nil
}

// metaServerOptions reads the server's token and limits from Mooncake's
// variables: MC_METADATA_HTTP_TOKEN, MC_METADATA_MAX_KEYS,
// MC_METADATA_MAX_TOTAL_BYTES.
func metaServerOptions() (httpstore.ServerOptions, error) {
	keys, err := positiveEnv("MC_METADATA_MAX_KEYS", math.MaxInt32)
	if err != nil {
		return httpstore.ServerOptions{}, err
	}
	bytes, err := positiveEnv("MC_METADATA_MAX_TOTAL_BYTES", math.MaxInt64)
	if err != nil {
		return httpstore.ServerOptions{}, err
	}
	return httpstore.ServerOptions{Token: os.Getenv("MC_METADATA_HTTP_TOKEN"), MaxKeys: int(keys), MaxTotalBytes: bytes}, nil
}

// positiveEnv reads a positive integer variable, capped at limit; unset
// or empty is 0 (the default).
func positiveEnv(name string, limit int64) (int64, error) {
	s := strings.TrimSpace(os.Getenv(name))
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", name, s)
	}
	return min(n, limit), nil
}

func runMetaServer(cmd *cobra.Command, f *metaServerFlags) error {
	if err := f.check(); err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("metadata-server: %w", err)
	}
	opts, err := metaServerOptions()
	if err != nil {
		ln.Close()
		return usageError{err}
	}
	if opts.Token == "" {
		if h, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(h).IsLoopback() {
			slog.Warn("metadata server reachable beyond loopback without a token: anyone who reaches it can rewrite cluster metadata; set MC_METADATA_HTTP_TOKEN here and on every engine", "addr", ln.Addr().String())
		}
	}
	mux := http.NewServeMux()
	mux.Handle(f.path, httpstore.NewServerWith(opts))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	u := "http://" + ln.Addr().String() + f.path
	slog.Info("metadata server listening", "addr", ln.Addr().String(), "path", f.path)
	fmt.Fprintf(cmd.OutOrStdout(), "metadata-server listening on %s\n", u)

	select {
	case err := <-served:
		return fmt.Errorf("metadata-server: %w", err)
	case <-ctx.Done():
	}
	slog.Info("metadata server shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		srv.Close()
		return fmt.Errorf("metadata-server: shutdown: %w", err)
	}
	return nil
}
