package fakeverbs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

// completionLoop is the loop a transport runs: poll, and when idle arm the
// CQ, poll once more, then sleep on the channel and ack its events.
func completionLoop(ctx context.Context, ch verbs.CompChannel, cq verbs.CQ, each func(verbs.Completion)) error {
	buf := make([]verbs.Completion, 64)
	for {
		n, err := cq.Poll(buf)
		if err != nil {
			return err
		}
		for _, c := range buf[:n] {
			each(c)
		}
		if n > 0 {
			continue
		}
		if err := cq.ReqNotify(false); err != nil {
			return err
		}
		if n, err = cq.Poll(buf); err != nil {
			return err
		}
		for _, c := range buf[:n] {
			each(c)
		}
		if n > 0 {
			continue
		}
		if err := ch.Wait(ctx); err != nil {
			return err
		}
		for {
			q, err := ch.GetEvent()
			if errors.Is(err, verbs.ErrWouldBlock) {
				break
			}
			if err != nil {
				return err
			}
			q.AckEvents(1)
		}
	}
}

func TestCompletionLoopOnNotifyFd(t *testing.T) {
	_, a, b := pair(t, endOpts{maxWR: 32}, endOpts{})
	a.nic.SetCompletionDelay(200 * time.Microsecond) // force the loop to sleep
	const total = 300
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan verbs.Completion, total)
	done := make(chan error, 1)
	go func() { done <- completionLoop(ctx, a.ch, a.cq, func(c verbs.Completion) { got <- c }) }()
	credits := make(chan struct{}, 32)
	for i := 0; i < 32; i++ {
		credits <- struct{}{}
	}
	go func() {
		for i := 0; i < total; i++ {
			<-credits
			if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, uint64(i), verbs.OpWrite, 0, 0, 512)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	timeout := time.After(10 * time.Second)
	for i := 0; i < total; i++ {
		select {
		case c := <-got:
			if c.WRID != uint64(i) || c.Status != verbs.StatusSuccess {
				t.Fatalf("completion %d = %+v", i, c)
			}
			credits <- struct{}{}
		case <-timeout:
			t.Fatalf("loop delivered %d of %d", i, total)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("loop ended with %v", err)
	}
}

// TestConcurrentQPs runs several connected pairs on the same two devices
// from concurrent goroutines while MRs come and go, for -race.
func TestConcurrentQPs(t *testing.T) {
	f := NewFabric()
	defer f.Close()
	pa, _ := f.AddHost(NICConfig{})
	pb, _ := f.AddHost(NICConfig{})
	da, _ := pa.Open("mlx5_0")
	db, _ := pb.Open("mlx5_0")
	defer da.Close()
	defer db.Close()
	pda, _ := da.AllocPD()
	pdb, _ := db.AllocPD()
	defer pda.Close()
	defer pdb.Close()
	const pairs, per = 4, 200
	var wg sync.WaitGroup
	for p := 0; p < pairs; p++ {
		cqa, _ := da.CreateCQ(64, nil)
		cqb, _ := db.CreateCQ(64, nil)
		qa, _ := pda.CreateQP(verbs.QPTypeRC, verbs.QPCaps{MaxSendWR: 16, MaxSGE: 1}, cqa, cqa)
		qb, _ := pdb.CreateQP(verbs.QPTypeRC, verbs.QPCaps{MaxSendWR: 16, MaxSGE: 1}, cqb, cqb)
		ma, mb := make([]byte, 4096), make([]byte, 4096)
		mra, _ := pda.RegMR(ma, verbs.AccessRemote)
		mrb, _ := pdb.RegMR(mb, verbs.AccessRemote)
		a := &end{t: t, dev: da, pd: pda, cq: cqa, qp: qa, mem: ma, mr: mra, nic: pa.NIC("mlx5_0")}
		b := &end{t: t, dev: db, pd: pdb, cq: cqb, qp: qb, mem: mb, mr: mrb, nic: pb.NIC("mlx5_0")}
		connect(t, a, b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				for _, c := range []interface{ Close() error }{mra, mrb, qa, qb, cqa, cqb} {
					if err := c.Close(); err != nil {
						t.Error(err)
					}
				}
			}()
			buf := make([]verbs.Completion, 16)
			posted, done := 0, 0
			for done < per {
				if posted < per && posted-done < 16 {
					n, err := qa.PostRW([]verbs.WorkRequest{wr(a, b, uint64(posted), verbs.OpWrite, 0, uint64(posted%4000), 64)})
					if err != nil {
						t.Error(err)
						return
					}
					posted += n
				}
				n, err := cqa.Poll(buf)
				if err != nil {
					t.Error(err)
					return
				}
				for _, c := range buf[:n] {
					if c.WRID != uint64(done) || c.Status != verbs.StatusSuccess {
						t.Errorf("completion %d = %+v", done, c)
						return
					}
					done++
				}
			}
		}()
	}
	// Churn MR registrations meanwhile.
	stop := make(chan struct{})
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		mem := make([]byte, 128)
		for {
			select {
			case <-stop:
				return
			default:
			}
			m, err := pdb.RegMR(mem, verbs.AccessRemote)
			if err != nil {
				t.Error(err)
				return
			}
			m.Close()
		}
	}()
	wg.Wait()
	close(stop)
	<-churned
}
