package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestListAllFollowsTokens: three pages are read in order, each call
// with the token the previous one answered and its own deadline.
func TestListAllFollowsTokens(t *testing.T) {
	pages := map[string]page[int]{"": {[]int{1, 2}, "a"}, "a": {nil, "b"}, "b": {[]int{3}, ""}}
	var tokens []string
	got, err := listAll(context.Background(), &csiFlags{timeout: time.Minute}, func(ctx context.Context, token string) (page[int], error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a call without a deadline")
		}
		tokens = append(tokens, token)
		return pages[token], nil
	})
	if err != nil || !slices.Equal(got, []int{1, 2, 3}) || !slices.Equal(tokens, []string{"", "a", "b"}) {
		t.Fatalf("entries %v, tokens %v, err %v", got, tokens, err)
	}
}

// TestListAllStopsAtError: a failed page ends the listing with its error
// and no partial list.
func TestListAllStopsAtError(t *testing.T) {
	calls := 0
	got, err := listAll(context.Background(), &csiFlags{timeout: time.Minute}, func(_ context.Context, token string) (page[int], error) {
		calls++
		if token == "" {
			return page[int]{[]int{1}, "next"}, nil
		}
		return page[int]{}, status.Error(codes.NotFound, "no such volume")
	})
	if err == nil || err.Error() != "NotFound: no such volume" || got != nil || calls != 2 {
		t.Fatalf("entries %v, calls %d, err %v; want nil, 2, NotFound", got, calls, err)
	}
}
