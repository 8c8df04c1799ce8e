package enforce

import (
	"context"
	"net/http"
)

// Pass is one request's decision, held by its caller from one request to
// the next (limiter/pipeline keeps one in each of its pooled calls):
// CheckIn decides into it in place, so that no Result is copied out, and
// on a store that copies the keys it keeps (limiter.KeyCopier) the bucket
// keys are made in memory the Pass keeps, not in memory taken from a pool
// and given back. The zero Pass is ready. A Pass serves one request at a
// time.
type Pass struct {
	ps pass
}

// CheckIn is Check deciding into h, which it empties first: the Result it
// returns is h's, and its next CheckIn overwrites it, so a caller that
// keeps anything of it beyond copies it.
func (e *Enforcer) CheckIn(ctx context.Context, r *http.Request, h *Pass) *Result {
	h.ps.reset(e)
	e.check(ctx, r, &h.ps)
	return &h.ps.res
}

// Result is the decision of h's last CheckIn (the zero Result before one).
func (h *Pass) Result() *Result { return &h.ps.res }

// reset empties ps for a check by e, keeping its held scratch. It clears
// only what a check fills, field by field: the pass is ≈ 1 KB, most of it
// the room for refunds (taken) and a held shed, which few checks use.
func (ps *pass) reset(e *Enforcer) {
	clear(ps.taken[:ps.n])
	if ps.shed.cr != nil {
		ps.shed = pendingShed{}
	}
	ps.res = Result{}
	ps.n, ps.more, ps.unlimited, ps.shedStood, ps.peek, ps.r = 0, nil, false, false, false, nil
	if e.pooled && ps.held == nil {
		ps.held = newScratch()
	}
}

// scratch is the request's scratch: on a store that copies its keys, the
// pass's held one or else a pooled one (given back when the check is
// done); on any other store a new one, which the Result's headers use too.
func (ps *pass) scratch() *scratch {
	switch {
	case !ps.e.pooled:
		return newScratch()
	case ps.held == nil:
		return scratches.Get().(*scratch)
	}
	ps.held.buf = ps.held.room[:0]
	return ps.held
}

// doneWith ends the use of the request's scratch on a store that copies
// its keys: they were the store's to copy, and WriteHeaders makes its own.
func (ps *pass) doneWith() {
	if sc := ps.res.sc; ps.e.pooled && sc != nil {
		if sc != ps.held {
			sc.reuse()
		}
		ps.res.sc = nil
	}
}
