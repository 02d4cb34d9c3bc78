package config

import (
	"errors"
	"slices"
	"testing"
)

func TestParseMaster(t *testing.T) {
	for in, want := range map[string]MasterAddr{
		"127.0.0.1:50051":              {Direct: "127.0.0.1:50051"},
		" master-0:50051 ":             {Direct: "master-0:50051"},
		"dns:///m:50051":               {Direct: "dns:///m:50051"},
		"etcd://10.0.0.1:2379":         {Etcd: []string{"10.0.0.1:2379"}},
		"ETCD://a:1,b:2;[::1]:3":       {Etcd: []string{"a:1", "b:2", "[::1]:3"}},
		"etcd://a:2379/prod":           {Etcd: []string{"a:2379"}, ClusterID: "prod"},
		"etcd://a:2379,b:2379/team/x/": {Etcd: []string{"a:2379", "b:2379"}, ClusterID: "team/x"},
	} {
		got, err := ParseMaster(in)
		if err != nil || got.Direct != want.Direct || got.ClusterID != want.ClusterID || !slices.Equal(got.Etcd, want.Etcd) {
			t.Errorf("ParseMaster(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if got.HA() != (len(want.Etcd) > 0) {
			t.Errorf("ParseMaster(%q).HA() = %v", in, got.HA())
		}
	}
	for _, in := range []string{"", "  ", "etcd://", "etcd:///c", "etcd://a", "etcd://a:0", "etcd://a:99999", "etcd://:2379",
		"etcd://a:1,b", "redis://r:6379", "http://m:8080"} {
		if m, err := ParseMaster(in); !errors.Is(err, ErrMasterAddress) {
			t.Errorf("ParseMaster(%q) = %+v, %v; want ErrMasterAddress", in, m, err)
		}
	}
}
