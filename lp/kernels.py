"""The longest-path kernels: every forward sweep over the event graph's CSR arrays lives here.

``T(θ)`` is the longest path of the event DAG (LLAMP Eq. 3/4). Events are numbered in
topological position and every in-edge ``k`` of position ``p`` comes from ``src[k] < p``, so
one forward pass — ``t[p] = max_k t[src[k]] + w[k]`` — gives every event time. The family:

- **values** (:func:`values`): event times, edge ``k`` weighing ``wa[q] + value[k]·wb[q]``
  with ``q = pattern[k]`` (the homogeneous LogGPS weights of :class:`~llamp.lp.event_graph.EventGraph`).
- **slopes** (:func:`slopes`, :func:`sided`): times plus one-sided derivatives along columns
  of per-pattern slopes; among the tight in-edges (within ``REL_TOL·|t| + ABS_TOL_NS`` of the
  max) the larger slope is kept for right derivatives (``sign`` +1), the smaller for left
  (−1), which makes them exact one-sided derivatives of a max of affine functions. The in-edge
  chosen at each event (``pred``) gives a critical path (:func:`backtrack_path`).
- **per-edge weights** (:func:`message_weights` builds them from per-message latencies and
  gaps; :func:`edge_slopes`, :func:`edge_lanes`, :func:`affine_lanes`,
  :func:`calc_lanes`): weights given per edge or per message (heterogeneous LogGP, topologies,
  compute noise, placements, 2-D regions).
- **lanes** (:func:`pair_lanes`, :func:`sided_lanes` and the ``*_lanes`` variants): ``K``
  parameter values (or weight vectors) in one pass over the edges. The CSR arrays are read once
  for all lanes and the ``K`` times of an event sit next to each other (lane index innermost),
  so a random read of ``t[src[k]]`` brings all lanes in one cache line and the inner loop
  vectorises. Each lane does exactly the floating-point operations of the one-value kernel, in
  the same order: lane results are bit-identical to it.

One tie rule for all: :data:`REL_TOL`, :data:`ABS_TOL_NS`.
"""

from __future__ import annotations

import numpy as np

from llamp.kernel import kernel

#: Two path lengths within ``REL_TOL·|t| + ABS_TOL_NS`` of each other are a tie (float noise).
REL_TOL = 1e-12
ABS_TOL_NS = 1e-7

#: Fast-math flags of the lane kernels: only "no NaN, no infinity" (none reach them), never
#: contraction or reassociation, which would change rounding (lanes must stay bit-identical).
_SAFE = {"nnan", "ninf"}
#: A finite "minus infinity" for running maxima under :data:`_SAFE` (no slope comes near it).
_BIG = 1e300

#: The columns ``in_ptr, src, pattern, value`` of an event graph as compiled kernels take
#: them: int32 or int64 indices, uint8 or uint16 patterns, float32 or float64 values
#: (:func:`llamp.lp.event_graph.build_event_graph`).
_CSR = tuple(
    f"{i}[::1], {i}[::1], {q}[::1], {v}[::1]"
    for i in ("i4", "i8")
    for q in ("u1", "u2")
    for v in ("f4", "f8")
)


# ------------------------------------------------------------------------------ one value
@kernel(nogil=True, inline="always")
def _latest(t, lo, hi, src, pattern, value, wa, wb):  # pragma: no cover - compiled
    """The latest arrival over in-edges ``lo:hi`` (``hi > lo``): max of ``t[src] + weight``."""
    q = pattern[lo]
    best = t[src[lo]] + wa[q] + value[lo] * wb[q]
    for k in range(lo + 1, hi):
        q = pattern[k]
        cand = t[src[k]] + wa[q] + value[k] * wb[q]
        if cand > best:
            best = cand
    return best


@kernel(*(f"{csr}, f8[::1], f8[::1]" for csr in _CSR), nogil=True)
def values(in_ptr, src, pattern, value, wa, wb):  # pragma: no cover - compiled
    """Event times: edge ``k`` weighs ``wa[pattern[k]] + value[k]·wb[pattern[k]]``."""
    n = in_ptr.shape[0] - 1
    t = np.zeros(n)
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        t[p] = _latest(t, lo, hi, src, pattern, value, wa, wb)
    return t


@kernel(
    *(f"{csr}, f8[::1], f8[::1], f8[:, ::1], f8[:, ::1], f8, f8, f8" for csr in _CSR),
    nogil=True,
)
def slopes(in_ptr, src, pattern, value, wa, wb, sa, sb, sign, rel, absol):  # pragma: no cover
    """Times, one-sided slopes along the columns of ``sa/sb`` (patterns × k: an edge's slope
    is ``sa[q, j] + value·sb[q, j]``; sign +1: right derivatives, −1: left) and the in-edge
    chosen at each event (tight, with the best slope along column 0)."""
    n = in_ptr.shape[0] - 1
    k_dim = sa.shape[1]
    t = np.zeros(n)
    d = np.zeros((n, k_dim))
    pred = np.full(n, -1, dtype=np.int64)
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        best = _latest(t, lo, hi, src, pattern, value, wa, wb)
        t[p] = best
        tol = rel * abs(best) + absol
        first = True
        for k in range(lo, hi):
            s = src[k]
            q = pattern[k]
            if t[s] + wa[q] + value[k] * wb[q] >= best - tol:
                v = value[k]
                if first:
                    for j in range(k_dim):
                        d[p, j] = d[s, j] + sa[q, j] + v * sb[q, j]
                    pred[p] = k
                    first = False
                else:
                    if sign * (d[s, 0] + sa[q, 0] + v * sb[q, 0]) > sign * d[p, 0]:
                        pred[p] = k
                    for j in range(k_dim):
                        cand = d[s, j] + sa[q, j] + v * sb[q, j]
                        if sign * cand > sign * d[p, j]:
                            d[p, j] = cand
    return t, d, pred


@kernel(
    *(f"{csr}, f8[::1], f8[::1], f8[:, ::1], f8[:, ::1], f8, f8, f8" for csr in _CSR),
    nogil=True,
)
def sided(in_ptr, src, pattern, value, wa, wb, sa, sb, sign, rel, absol):  # pragma: no cover
    """``T`` and its one-sided derivatives along the columns of ``sa/sb`` (sign +1: right, −1:
    left), aggregated over the tight sinks: :func:`slopes` without its predecessor array and
    without handing per-event arrays back (32 B per event for three directions)."""
    n = in_ptr.shape[0] - 1
    k_dim = sa.shape[1]
    t = np.zeros(n)
    d = np.zeros((n, k_dim))
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        best = _latest(t, lo, hi, src, pattern, value, wa, wb)
        t[p] = best
        tol = rel * abs(best) + absol
        first = True
        for k in range(lo, hi):
            s = src[k]
            q = pattern[k]
            if t[s] + wa[q] + value[k] * wb[q] >= best - tol:
                v = value[k]
                for j in range(k_dim):
                    cand = d[s, j] + sa[q, j] + v * sb[q, j]
                    if first or sign * cand > sign * d[p, j]:
                        d[p, j] = cand
                first = False
    T = 0.0
    for p in range(n):
        if t[p] > T:
            T = t[p]
    tol = rel * abs(T) + absol
    agg = np.zeros(k_dim)
    seen = False
    for p in range(n):
        if t[p] >= T - tol:
            for j in range(k_dim):
                if not seen or sign * d[p, j] > sign * agg[j]:
                    agg[j] = d[p, j]
            seen = True
    return T, agg


@kernel(*(f"{csr}, f8[::1], f8[::1], f8[::1], f8[::1], f8, f8" for csr in _CSR), nogil=True)
def pair(in_ptr, src, pattern, value, wa, wb, sa, sb, rel, absol):  # pragma: no cover
    """``T`` and its right and left derivative along one parameter (per-pattern slope
    ``sa[q] + value·sb[q]``) in one sweep: one lane of :func:`lanes` with its two columns
    (+1, −1), scalar, for the single probes of the tolerance walks."""
    n = in_ptr.shape[0] - 1
    t = np.zeros(n)
    dr = np.zeros(n)
    dl = np.zeros(n)
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        best = _latest(t, lo, hi, src, pattern, value, wa, wb)
        t[p] = best
        tol = rel * abs(best) + absol
        right = -np.inf
        left = np.inf
        for k in range(lo, hi):
            s = src[k]
            q = pattern[k]
            if t[s] + wa[q] + value[k] * wb[q] >= best - tol:
                c = sa[q] + value[k] * sb[q]
                if dr[s] + c > right:
                    right = dr[s] + c
                if dl[s] + c < left:
                    left = dl[s] + c
        dr[p] = right
        dl[p] = left
    T = t.max()
    tol = rel * abs(T) + absol
    right = -np.inf
    left = np.inf
    for p in range(n):
        if t[p] >= T - tol:
            if dr[p] > right:
                right = dr[p]
            if dl[p] < left:
                left = dl[p]
    return T, right, left


@kernel(nogil=True)
def backward_late(out_ptr, out_edge, dst, w, T):  # pragma: no cover - compiled
    """Latest time of every event such that no path exceeds ``T`` (the backward sweep)."""
    n = out_ptr.shape[0] - 1
    late = np.empty(n)
    for p in range(n - 1, -1, -1):
        lo = out_ptr[p]
        hi = out_ptr[p + 1]
        if lo == hi:
            late[p] = T
            continue
        k = out_edge[lo]
        best = late[dst[k]] - w[k]
        for i in range(lo + 1, hi):
            k = out_edge[i]
            cand = late[dst[k]] - w[k]
            if cand < best:
                best = cand
        late[p] = best
    return late


@kernel("i8[::1], i4[::1], i8", "i8[::1], i8[::1], i8", nogil=True)
def backtrack_path(pred, src, sink):  # pragma: no cover - compiled
    """Follow the chosen in-edges from ``sink`` back to a source; return both in path order."""
    length = 0
    p = sink
    while pred[p] >= 0:
        length += 1
        p = src[pred[p]]
    positions = np.empty(length + 1, dtype=np.int64)
    edges = np.empty(length, dtype=np.int64)
    p = sink
    for i in range(length, 0, -1):
        positions[i] = p
        edges[i - 1] = pred[p]
        p = src[pred[p]]
    positions[0] = p
    return positions, edges


# ------------------------------------------------------------------------------ lanes
@kernel("i4[::1], i4[::1]", "i8[::1], i8[::1]", nogil=True)
def reach(in_ptr, src):  # pragma: no cover - compiled
    """The farthest any edge reaches back, ``max(p − src[k])`` (0 without edges).

    Lane kernels keep the state of the last :func:`ring_size` events only (a ring indexed by
    ``p & mask``): an event is never read again once every later event that may read it has
    been swept. Trace graphs reach back little (the 10^6-vertex stencil: under 1,000 of its
    2·10^6 events), so the ring stays in cache whatever the graph's size.
    """
    n = in_ptr.shape[0] - 1
    far = 0
    for p in range(n):
        for k in range(in_ptr[p], in_ptr[p + 1]):
            if p - src[k] > far:
                far = p - src[k]
    return far


def ring_size(in_ptr: np.ndarray, src: np.ndarray) -> int:
    """Events the lane kernels keep: a power of two above :func:`reach` (their ``mask`` + 1)."""
    return 1 << int(reach(in_ptr, src) + 1).bit_length()


#: Candidate sinks a lane keeps (events within the tie tolerance of the running max; when
#: they overflow — a pathological run of equal times — the pass is redone with the final
#: thresholds known, see :func:`lanes`).
CANDIDATES = 256
#: Events per sink step of the lane passes (a power of two; fewer when the ring is smaller).
SINK_BLOCK = 32


@kernel(nogil=True)
def _compact(bt, bd, count, theta):  # pragma: no cover - compiled
    """The candidate rows of :func:`_lanes_pass` (one row: an event's time and signed slopes
    in every lane) reduced to those some lane still needs: a lane drops a row below its
    ``theta`` (marked ``-_BIG``) or with the time of an earlier kept row (equal times are
    tight or not together: their signed slopes merge by max); returns the rows kept."""
    K = bt.shape[1]
    rows = bd.shape[1]
    kept = 0
    for c in range(count):
        live = False
        for j in range(K):
            x = bt[c, j]
            if x < theta[j]:
                bt[c, j] = -_BIG
                continue
            same = -1
            for e in range(kept):
                if bt[e, j] == x:
                    same = e
                    break
            if same < 0:
                live = True
            else:
                for i in range(rows):
                    bd[same, i, j] = max(bd[same, i, j], bd[c, i, j])
                bt[c, j] = -_BIG
        if live:
            for j in range(K):
                bt[kept, j] = bt[c, j]
                for i in range(rows):
                    bd[kept, i, j] = bd[c, i, j]
            kept += 1
    return kept


@kernel(nogil=True, fastmath=_SAFE)
def _sink_slopes(bt, bd, count, theta, agg, sgn, fixed):  # pragma: no cover - compiled
    """End of a lane pass: fold the candidate sink rows still within each lane's final
    threshold into ``agg`` (signed max per slope row and lane; with ``fixed`` thresholds the
    pass aggregated them already) and return the slopes as K × rows, signs undone."""
    rows, K = agg.shape
    if not fixed:
        for c in range(count):
            for i in range(rows):
                for j in range(K):
                    y = bd[c, i, j]
                    take = (bt[c, j] >= theta[j]) & (y > agg[i, j])
                    agg[i, j] = y if take else agg[i, j]
    out = np.empty((K, rows))
    for j in range(K):
        for i in range(rows):
            out[j, i] = sgn[i] * agg[i, j]
    return out


@kernel(
    *(
        f"{csr}, f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], i8, f8[::1], f8, f8"
        for csr in _CSR
    ),
    nogil=True,
    fastmath=_SAFE,
)
def _lanes_pass(
    in_ptr, src, pattern, value, WA, WB, sa, sb, sgn, mask, known, rel, absol
):  # pragma: no cover - compiled
    """One pass of :func:`lanes`; also returns whether the candidate sinks overflowed.

    Written for the vectoriser: every inner loop runs over the ``K`` lanes of contiguous rows
    (``st[slot, r, :]``, ``WA[q, :]``) indexed directly (no array views, whose reference
    counting would sit in the edge loop), and selects are branch-free. An event with one
    in-edge takes its times and slopes straight from it (its only in-edge is tight, and
    ``sgn·(sgn·x) = x`` exactly for ``sgn = ±1``)."""
    n = in_ptr.shape[0] - 1
    K = WA.shape[1]
    rows = sgn.shape[0]
    st = np.zeros((min(mask + 1, n), 1 + rows, K))
    best = np.empty(K)
    thr = np.empty(K)
    acc = np.empty((rows, K))
    tight = np.empty(K)
    T = np.zeros(K)
    theta = known.copy() if known.shape[0] > 0 else np.full(K, -absol)
    agg = np.full((rows, K), -_BIG)
    bt = np.empty((CANDIDATES, K))
    bd = np.empty((CANDIDATES, rows, K))
    count = 0
    over = False
    fixed = known.shape[0] > 0
    bmask = min(SINK_BLOCK, mask + 1) - 1
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        slot = p & mask
        if lo == hi:
            for r in range(1 + rows):
                for j in range(K):
                    st[slot, r, j] = 0.0
        elif hi == lo + 1:
            s = src[lo] & mask
            q = pattern[lo]
            v = value[lo]
            for j in range(K):
                st[slot, 0, j] = st[s, 0, j] + WA[q, j] + v * WB[q, j]
            for i in range(rows):
                c = sa[q, i] + v * sb[q, i]
                for j in range(K):
                    st[slot, 1 + i, j] = st[s, 1 + i, j] + c
        else:
            s = src[lo] & mask
            q = pattern[lo]
            v = value[lo]
            for j in range(K):
                best[j] = st[s, 0, j] + WA[q, j] + v * WB[q, j]
            for k in range(lo + 1, hi):
                s = src[k] & mask
                q = pattern[k]
                v = value[k]
                for j in range(K):
                    x = st[s, 0, j] + WA[q, j] + v * WB[q, j]
                    best[j] = x if x > best[j] else best[j]
            for j in range(K):
                thr[j] = best[j] - (rel * abs(best[j]) + absol)
            for i in range(rows):
                for j in range(K):
                    acc[i, j] = -_BIG
            for k in range(lo, hi):
                s = src[k] & mask
                q = pattern[k]
                v = value[k]
                for j in range(K):
                    x = st[s, 0, j] + WA[q, j] + v * WB[q, j]
                    tight[j] = 1.0 if x >= thr[j] else 0.0
                for i in range(rows):
                    c = sa[q, i] + v * sb[q, i]
                    g = sgn[i]
                    for j in range(K):
                        x = g * (st[s, 1 + i, j] + c)
                        acc[i, j] = x if (tight[j] > 0.0) & (x > acc[i, j]) else acc[i, j]
            for j in range(K):
                st[slot, 0, j] = best[j]
            for i in range(rows):
                g = sgn[i]
                for j in range(K):
                    st[slot, 1 + i, j] = g * acc[i, j]
        # the sink step, written out (no call in this loop), once per block of events still
        # in the ring: the running max first, then the thresholds of the block's end (higher
        # than each event's own, and no higher than the final ones: every tight sink passes)
        if (p & bmask) != bmask and p != n - 1:
            continue
        first = p - (p & bmask)
        for e in range(first, p + 1):
            sl = e & mask
            for j in range(K):
                x = st[sl, 0, j]
                T[j] = x if x > T[j] else T[j]
        if not fixed:
            for j in range(K):
                theta[j] = T[j] - (rel * abs(T[j]) + absol)
        for e in range(first, p + 1):
            sl = e & mask
            hit = 0
            for j in range(K):
                hit += st[sl, 0, j] >= theta[j]
            if hit == 0:
                continue
            if fixed:
                for i in range(rows):
                    g = sgn[i]
                    for j in range(K):
                        y = g * st[sl, 1 + i, j]
                        take = (st[sl, 0, j] >= theta[j]) & (y > agg[i, j])
                        agg[i, j] = y if take else agg[i, j]
                continue
            if over:
                break
            if count == CANDIDATES:
                count = _compact(bt, bd, count, theta)
                if count == CANDIDATES:
                    over = True
                    break
            # the whole row: a lane below its threshold now stays below every later one
            for j in range(K):
                bt[count, j] = st[sl, 0, j]
            for i in range(rows):
                g = sgn[i]
                for j in range(K):
                    bd[count, i, j] = g * st[sl, 1 + i, j]
            count += 1
    return T, _sink_slopes(bt, bd, count, theta, agg, sgn, fixed), over


#: The lane kernels' vectorised loops run over the lanes in chunks of 4 (AVX2) or 8 (AVX-512)
#: doubles and leave the rest to scalar code, so a pass of more than 4 lanes computes a
#: multiple of 4 (:func:`padded_lanes`). :func:`lanes` on the 3·10^6-vertex stencil (7·10^6
#: events, one thread, T and three slopes; ``benchmarks/RESULTS.md``, "Lanes in multiples of
#: 4"): 0.43 s at K = 4, 0.50 at 5, 0.54 at 6, 0.59 at 7, 0.46 at 8, 0.64 at 11, 0.52 at 12.
LANE_STEP = 4


def padded_lanes(count: int) -> int:
    """Lanes a pass of ``count`` values computes: ``count`` up to :data:`LANE_STEP`, else the
    next multiple of it (each lane's numbers are its own: the extra ones change none)."""
    return count if count <= LANE_STEP else -(-count // LANE_STEP) * LANE_STEP


def lanes(
    in_ptr: np.ndarray,
    src: np.ndarray,
    pattern: np.ndarray,
    value: np.ndarray,
    WA: np.ndarray,
    WB: np.ndarray,
    sa: np.ndarray,
    sb: np.ndarray,
    sgn: np.ndarray,
    mask: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``T`` and one-sided derivatives in ``K`` lanes: one pass over the edges for all of them.

    Lane ``j`` weighs edge ``k`` ``WA[q, j] + value[k]·WB[q, j]`` (``q = pattern[k]``; ``WA,
    WB``: patterns × K, one column per parameter value). Slope column ``i`` of an edge is
    ``sa[q, i] + value[k]·sb[q, i]`` in every lane; ``sgn[i]`` +1 makes it a right derivative
    (larger slope kept among tight in-edges and sinks), −1 a left one. Per lane the numbers are
    exactly those of :func:`slopes` aggregated over the tight sinks. The state is a ring of
    ``mask + 1`` events (:func:`ring_size`), ``8·(1 + c)·K`` bytes each. Returns ``T`` (K) and
    the slopes (K × c).
    """
    K = WA.shape[1]
    if padded_lanes(K) > K:  # the extra lanes repeat the last one and are dropped
        extra = ((0, 0), (0, padded_lanes(K) - K))
        WA, WB = np.pad(WA, extra, mode="edge"), np.pad(WB, extra, mode="edge")
    args = (in_ptr, src, pattern, value, WA, WB, sa, sb, np.asarray(sgn, dtype=np.float64), mask)
    T, agg, over = _lanes_pass(*args, np.zeros(0), REL_TOL, ABS_TOL_NS)
    if over:
        known = T - (REL_TOL * np.abs(T) + ABS_TOL_NS)
        T, agg, _ = _lanes_pass(*args, known, REL_TOL, ABS_TOL_NS)
    return T[:K], agg[:K]


# ------------------------------------------------------------------------------ per-edge weights
@kernel(nogil=True)
def message_weights(
    pattern, value, fixed, scaled, msg, latency, gap, dlatency, dgap, o, g, scale, w, dw
):  # pragma: no cover - compiled
    """Per-edge weights and slopes under per-message latencies and gaps, in one pass.

    Edge ``k`` has the coefficients ``c = fixed[q] + value[k]·scaled[q]`` (``q =
    pattern[k]``; :meth:`~llamp.lp.event_graph.EventGraph.coefficients`) and, if it carries
    message ``m = msg[k] ≥ 0``, that message's ``latency[m]``, ``gap[m]`` (else 0): ``w[k] =
    c_const·scale[k] + c_L·L + c_G·G + c_o·o (+ c_g·g)`` and ``dw[k, j] = c_L·dlatency[m, j] +
    c_G·dgap[m, j]`` (0 without a message), the operations of the array expression in
    :func:`llamp.lp.weighted.edge_weights` in the same order (``scale`` empty: 1;
    ``dlatency``/``dgap`` with no rows: no slope from them)."""
    scaled_const = scale.shape[0] > 0
    k_dim = dw.shape[1]
    with_dl = dlatency.shape[0] > 0
    with_dg = dgap.shape[0] > 0
    for k in range(pattern.shape[0]):
        q = pattern[k]
        v = np.float64(value[k])
        c0 = fixed[q, 0] + v * scaled[q, 0]
        cl = fixed[q, 1] + v * scaled[q, 1]
        cg = fixed[q, 2] + v * scaled[q, 2]
        co = fixed[q, 3] + v * scaled[q, 3]
        if scaled_const:
            c0 = c0 * scale[k]
        m = msg[k]
        L = latency[m] if m >= 0 else 0.0
        G = gap[m] if m >= 0 else 0.0
        x = c0 + cl * L
        x = x + cg * G
        x = x + co * o
        if g != 0.0:
            x = x + (fixed[q, 4] + v * scaled[q, 4]) * g
        w[k] = x
        for j in range(k_dim):
            d = 0.0
            if m >= 0:
                if with_dl:
                    d = d + cl * dlatency[m, j]
                if with_dg:
                    d = d + cg * dgap[m, j]
            dw[k, j] = d


@kernel(nogil=True)
def edge_slopes(in_ptr, src, w, dw, sign, rel, absol):  # pragma: no cover - compiled
    """:func:`slopes` with weights given per edge: edge ``k`` weighs ``w[k]``, its slope along
    variable ``j`` is ``dw[k, j]``. Returns times, slopes (n × k) and chosen in-edges."""
    n = in_ptr.shape[0] - 1
    k_dim = dw.shape[1]
    t = np.zeros(n)
    d = np.zeros((n, k_dim))
    pred = np.full(n, -1, dtype=np.int64)
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        best = t[src[lo]] + w[lo]
        for k in range(lo + 1, hi):
            cand = t[src[k]] + w[k]
            if cand > best:
                best = cand
        t[p] = best
        tol = rel * abs(best) + absol
        first = True
        for k in range(lo, hi):
            s = src[k]
            if t[s] + w[k] >= best - tol:
                if first:
                    for j in range(k_dim):
                        d[p, j] = d[s, j] + dw[k, j]
                    pred[p] = k
                    first = False
                else:
                    if k_dim and sign * (d[s, 0] + dw[k, 0]) > sign * d[p, 0]:
                        pred[p] = k
                    for j in range(k_dim):
                        cand = d[s, j] + dw[k, j]
                        if sign * cand > sign * d[p, j]:
                            d[p, j] = cand
    return t, d, pred


@kernel(nogil=True, fastmath=_SAFE)
def edge_lanes(in_ptr, src, W, group, num_groups, mask):  # pragma: no cover - compiled
    """Lanes of per-edge weights: lane ``j`` weighs edge ``k`` ``W[k, j]`` (E × K). Returns the
    latest event time of every group in every lane (K × num_groups; events of ``group`` −1
    belong to none): with one group (all 0) that is ``T`` per lane, with ranks the completion
    time of every rank. Times live in a ring of ``mask + 1`` events (:func:`ring_size`)."""
    n = in_ptr.shape[0] - 1
    K = W.shape[1]
    t = np.zeros((min(mask + 1, n), K))
    fin = np.zeros((num_groups, K))  # lanes contiguous; handed back transposed
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        slot = p & mask
        if lo < hi:
            s = src[lo] & mask
            for j in range(K):
                t[slot, j] = t[s, j] + W[lo, j]
            for k in range(lo + 1, hi):
                s = src[k] & mask
                for j in range(K):
                    cand = t[s, j] + W[k, j]
                    t[slot, j] = cand if cand > t[slot, j] else t[slot, j]
        else:
            for j in range(K):
                t[slot, j] = 0.0
        r = group[p]
        if r >= 0:
            for j in range(K):
                x = t[slot, j]
                fin[r, j] = x if x > fin[r, j] else fin[r, j]
    return fin.T.copy()


@kernel(nogil=True, fastmath=_SAFE)
def affine_lanes(in_ptr, src, c0, du, dv, us, vs, mask):  # pragma: no cover - compiled
    """``T`` and the affine length of one critical path in ``K`` lanes: lane ``j`` weighs
    edge ``k`` ``c0[k] + us[j]·du[k] + vs[j]·dv[k]`` (weights affine in two variables).

    Each event carries, next to its time, the sums of ``c0``, ``du``, ``dv`` along the path
    through its latest in-edge (the first of equal ones), so no per-event predecessor array
    is kept: the state is a ring of ``mask + 1`` events (:func:`ring_size`) of 4 rows × K, and
    the cost of a pass is one read of the edges for all lanes. Returns ``T`` (K) and
    ``path`` (3 × K): ``a, b, c`` of a path through the first latest event, whose length
    ``a + b·u + c·v`` is ``T`` at the lane's point and a lower bound of ``T`` everywhere."""
    n = in_ptr.shape[0] - 1
    K = us.shape[0]
    st = np.zeros((min(mask + 1, n), 4, K))
    best = np.empty(K)
    ba = np.empty(K)
    bb = np.empty(K)
    bc = np.empty(K)
    T = np.full(K, -np.inf)
    path = np.zeros((3, K))
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        slot = p & mask
        if lo == hi:
            for r in range(4):
                for j in range(K):
                    st[slot, r, j] = 0.0
        else:
            s = src[lo] & mask
            base = c0[lo]
            a = du[lo]
            b = dv[lo]
            for j in range(K):
                best[j] = st[s, 0, j] + base + a * us[j] + b * vs[j]
                ba[j] = st[s, 1, j] + base
                bb[j] = st[s, 2, j] + a
                bc[j] = st[s, 3, j] + b
            for k in range(lo + 1, hi):
                s = src[k] & mask
                base = c0[k]
                a = du[k]
                b = dv[k]
                for j in range(K):
                    cand = st[s, 0, j] + base + a * us[j] + b * vs[j]
                    take = cand > best[j]
                    best[j] = cand if take else best[j]
                    ba[j] = st[s, 1, j] + base if take else ba[j]
                    bb[j] = st[s, 2, j] + a if take else bb[j]
                    bc[j] = st[s, 3, j] + b if take else bc[j]
            for j in range(K):
                st[slot, 0, j] = best[j]
                st[slot, 1, j] = ba[j]
                st[slot, 2, j] = bb[j]
                st[slot, 3, j] = bc[j]
        for j in range(K):
            x = st[slot, 0, j]
            take = x > T[j]
            T[j] = x if take else T[j]
            path[0, j] = st[slot, 1, j] if take else path[0, j]
            path[1, j] = st[slot, 2, j] if take else path[1, j]
            path[2, j] = st[slot, 3, j] if take else path[2, j]
    return T, path


@kernel(nogil=True, fastmath=_SAFE)
def _calc_pass(
    in_ptr, src, const, cL, rest, calc_row, St, Ls, with_slopes, mask, known, rel, absol
):  # pragma: no cover - compiled
    """One pass of :func:`calc_lanes` (``St``: the scales transposed, rows × K, lanes
    contiguous); also returns whether the candidate sinks overflowed. Written for the
    vectoriser like :func:`_lanes_pass`, whose sink step it repeats (a call per event, with
    its array arguments' reference counting, would cost more than the pass)."""
    n = in_ptr.shape[0] - 1
    K = Ls.shape[0]
    rows = 2 if with_slopes else 0
    sgn = np.array([1.0, -1.0])[:rows]
    st = np.zeros((min(mask + 1, n), 1 + rows, K))
    best = np.empty(K)
    tol = np.empty(K)
    right = np.empty(K)
    left = np.empty(K)
    T = np.zeros(K)
    theta = known.copy() if known.shape[0] > 0 else np.full(K, -absol)
    agg = np.full((rows, K), -_BIG)
    bt = np.empty((CANDIDATES, K))
    bd = np.empty((CANDIDATES, rows, K))
    count = 0
    over = False
    fixed = known.shape[0] > 0
    width = 1
    for p in range(n):
        if in_ptr[p + 1] - in_ptr[p] > width:
            width = in_ptr[p + 1] - in_ptr[p]
    cand = np.empty((width, K))
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        slot = p & mask
        if lo == hi:
            for i in range(1 + rows):
                for j in range(K):
                    st[slot, i, j] = 0.0
        else:
            for j in range(K):
                best[j] = -_BIG
            for k in range(lo, hi):
                r = calc_row[k]
                s = src[k] & mask
                e = k - lo
                a = const[k]
                b = cL[k]
                f = rest[k]
                if r >= 0:
                    for j in range(K):
                        c = st[s, 0, j] + (a * St[r, j] + b * Ls[j] + f)
                        cand[e, j] = c
                        best[j] = c if c > best[j] else best[j]
                else:
                    for j in range(K):
                        c = st[s, 0, j] + (a * 1.0 + b * Ls[j] + f)
                        cand[e, j] = c
                        best[j] = c if c > best[j] else best[j]
            if with_slopes:
                for j in range(K):
                    tol[j] = best[j] - (rel * abs(best[j]) + absol)
                    right[j] = -_BIG
                    left[j] = _BIG
                for k in range(lo, hi):
                    s = src[k] & mask
                    e = k - lo
                    b = cL[k]
                    for j in range(K):
                        tight = cand[e, j] >= tol[j]
                        x = st[s, 1, j] + b
                        y = st[s, 2, j] + b
                        right[j] = x if tight & (x > right[j]) else right[j]
                        left[j] = y if tight & (y < left[j]) else left[j]
                for j in range(K):
                    st[slot, 1, j] = right[j]
                    st[slot, 2, j] = left[j]
            for j in range(K):
                st[slot, 0, j] = best[j]
        if not with_slopes:
            for j in range(K):
                x = st[slot, 0, j]
                T[j] = x if x > T[j] else T[j]
            continue
        # the sink step of _lanes_pass
        hit = 0
        if fixed:
            for j in range(K):
                x = st[slot, 0, j]
                T[j] = x if x > T[j] else T[j]
                hit += x >= theta[j]
            if hit:
                for i in range(rows):
                    g = sgn[i]
                    for j in range(K):
                        y = g * st[slot, 1 + i, j]
                        take = (st[slot, 0, j] >= theta[j]) & (y > agg[i, j])
                        agg[i, j] = y if take else agg[i, j]
            continue
        for j in range(K):
            x = st[slot, 0, j]
            y = x if x > T[j] else T[j]
            T[j] = y
            theta[j] = y - (rel * abs(y) + absol)
            hit += x >= theta[j]
        if hit == 0 or over:
            continue
        if count == CANDIDATES:
            count = _compact(bt, bd, count, theta)
            if count == CANDIDATES:
                over = True
                continue
        for j in range(K):
            bt[count, j] = st[slot, 0, j]
        for i in range(rows):
            g = sgn[i]
            for j in range(K):
                bd[count, i, j] = g * st[slot, 1 + i, j]
        count += 1
    return T, _sink_slopes(bt, bd, count, theta, agg, sgn, fixed), over


def calc_lanes(
    in_ptr: np.ndarray,
    src: np.ndarray,
    const: np.ndarray,
    cL: np.ndarray,
    rest: np.ndarray,
    calc_row: np.ndarray,
    S: np.ndarray,
    Ls: np.ndarray,
    with_slopes: bool,
    mask: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``T`` (and its right and left derivative along ``L`` when ``with_slopes``) in ``K``
    lanes of compute-noise samples: lane ``j`` weighs edge ``k``
    ``const[k]·S[j, calc_row[k]] + cL[k]·Ls[j] + rest[k]`` (``calc_row[k] < 0``: scale 1).
    State: a ring of ``mask + 1`` events (:func:`ring_size`). Returns ``T``, right, left (each
    K; the slopes are zero without ``with_slopes``)."""
    St = np.ascontiguousarray(np.asarray(S, dtype=np.float64).T)
    args = (in_ptr, src, const, cL, rest, calc_row, St, Ls, bool(with_slopes), mask)
    T, agg, over = _calc_pass(*args, np.zeros(0), REL_TOL, ABS_TOL_NS)
    if over:
        known = T - (REL_TOL * np.abs(T) + ABS_TOL_NS)
        T, agg, _ = _calc_pass(*args, known, REL_TOL, ABS_TOL_NS)
    if not with_slopes:
        return T, np.zeros(T.size), np.zeros(T.size)
    return T, np.ascontiguousarray(agg[:, 0]), np.ascontiguousarray(agg[:, 1])
