//go:build amd64 || arm64

package valgrind

// request issues the client request whose code and five arguments are
// args and returns valgrind's answer, or def when the program runs
// natively. It is in valgrind_$GOARCH.s. Valgrind reads args while the
// request runs and keeps no reference to it.
//
//go:noescape
func request(args *[6]uintptr, def uintptr) uintptr
