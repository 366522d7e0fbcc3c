// Package nearsort sorts data that is nearly in order, as the samples of a
// V8 CPU profile are: their times go backwards only where a negative
// timeDelta moves a sample back by one or two places.
package nearsort

// Insertion sorts the n elements that less and swap see by insertion,
// stably, moving elements at most 4n+1024 times: about one comparison an
// element when the data is nearly in order. It reports whether it
// finished. When it did not, the data is partly sorted with equal elements
// still in their first order, and the caller finishes with a stable sort
// (or one that breaks ties by original position), which that order does
// not mislead.
func Insertion(n int, less func(i, j int) bool, swap func(i, j int)) bool {
	budget := 4*n + 1024
	for i := 1; i < n; i++ {
		for j := i; j > 0 && less(j, j-1); j-- {
			swap(j, j-1)
			if budget--; budget < 0 {
				return false
			}
		}
	}
	return true
}
