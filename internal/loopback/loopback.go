// Package loopback finds ports on the loopback interface for the servers
// this program starts as child processes (the private redis-server) and
// that tests start (versitygw, redis-server).
package loopback

import "net"

// FreePort is a TCP port on 127.0.0.1 that was free a moment ago: the
// kernel picks it for a listener that is closed at once, so another
// process may take it before the child binds it (the child then fails to
// start and says so).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
