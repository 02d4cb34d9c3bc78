// Package multihost runs Ferry's daemons as separate processes on separate
// network hosts: Linux network namespaces joined by veth links to a bridge
// that lives in a namespace of its own. The tests need root (they create
// namespaces and links) and skip with a clear message otherwise. All
// addresses are in 198.18.0.0/15, the range set aside for network tests
// (RFC 2544), and exist only inside the namespaces the tests create.
package multihost
