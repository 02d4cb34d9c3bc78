package owner

import (
	"context"

	"google.golang.org/grpc"
)

func (w *Owner) startServer() {
	w.srv = grpc.NewServer(grpc.WaitForHandlers(true))
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		_ = w.srv.Serve(w.lis)
	}()
}

func (w *Owner) stopServer(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		w.srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		w.srv.Stop()
		<-done
	}
}
