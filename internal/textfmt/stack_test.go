package textfmt

import "testing"

func TestStack(t *testing.T) {
	f := []string{"a", "b", "c", "d", "e"}
	for _, c := range []struct {
		max  int
		want string
	}{
		{4, "a <- b <- c <- d <- e"},
		{5, "a <- b <- c <- d <- e"},
		{3, "a <- b <- c <- ... (2 more)"},
		{1, "a <- ... (4 more)"},
	} {
		if got := Stack(f, c.max); got != c.want {
			t.Errorf("Stack(%v, %d) = %q, want %q", f, c.max, got, c.want)
		}
	}
}
