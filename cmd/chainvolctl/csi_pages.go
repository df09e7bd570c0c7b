package main

import "context"

// page is one answer of a paged CSI list RPC: its entries and its
// next_token ("" on the last page).
type page[E any] struct {
	entries []E
	next    string
}

// listAll reads every page of a paged CSI list RPC (ListVolumes,
// ListSnapshots): list is called with starting_token "", then with each
// next_token until one is "", each call bounded by f's --timeout, and
// the entries of every page are returned in order. Errors: the first
// failed call's, through explainCSI.
func listAll[E any](ctx context.Context, f *csiFlags, list func(ctx context.Context, token string) (page[E], error)) ([]E, error) {
	var all []E
	for token := ""; ; {
		cctx, cancel := f.withTimeout(ctx)
		p, err := list(cctx, token)
		cancel()
		if err != nil {
			return nil, explainCSI(err)
		}
		all = append(all, p.entries...)
		if token = p.next; token == "" {
			return all, nil
		}
	}
}
