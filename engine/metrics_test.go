package engine

import (
	"testing"

	"github.com/ferrylabs/ferry/transport"
	"github.com/ferrylabs/ferry/transport/faketransport"
	"github.com/prometheus/client_golang/prometheus"
)

func TestTwoEnginesOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	net := faketransport.NewNetwork()
	f := []transport.Factory{net.Factory(faketransport.Options{})}
	a := newEngine(t, reg, f...)
	b := newEngine(t, reg, f...)
	seg := openSeg(t, a, b)
	local, remote := make([]byte, 100), make([]byte, 100)
	mustRegister(t, a, local)
	mustRegister(t, b, remote)
	if err := a.Transfer(ctxT(t), []Request{{Op: transport.Write, Local: Addr(local), Target: seg, TargetAddr: Addr(remote), Length: 100}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Transfer(ctxT(t), []Request{{Op: transport.Read, Local: Addr(remote), Target: LocalSegmentID, TargetAddr: Addr(remote), Length: 0}}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "ferry_engine_bytes_total" {
			for _, m := range mf.GetMetric() {
				found = found || m.GetCounter().GetValue() == 100
			}
		}
	}
	if !found {
		t.Fatal("ferry_engine_bytes_total does not show the 100 bytes written")
	}
}

func TestTwoDefaultEnginesOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	newEngine(t, reg)
	newEngine(t, reg)
}
