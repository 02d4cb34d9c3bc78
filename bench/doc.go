// Package bench holds the NIC benchmark behind `ferry bench`: Mooncake's
// transfer_engine_bench workload over the Ferry engine (initiator and target
// roles, same flags, same closing line), a sweep over block sizes and
// thread counts with latency percentiles, and a raw Go TCP loopback
// baseline to compare the TCP transport against.
package bench
