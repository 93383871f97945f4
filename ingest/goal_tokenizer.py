"""The compiled GOAL tokenizer: bytes of a chunk in, typed vertex and edge columns out.

:func:`scan_chunk` runs over the complete lines of one chunk of a GOAL file (``numba``, one pass,
no Python object per line) and handles every line of the grammar that makes an op or a
dependency (labelled or not, optional ``tag``/``cpu``/``nic``, ``-1`` wildcards, ``4 b``,
fractional costs, comments). It stops and returns an *event* for what Python decides: a line it
does not take (``num_ranks``, block headers and ends, and every malformed line, which Python
re-reads to say what is wrong), a dependency naming an unknown label, a duplicate label, a number
beyond 64 bits, a non-ASCII byte, or a full label table. Python acts and calls it again; the
state that spans chunks (line number, vertex count, open block, open ``/*`` comment, the block's
label table) lives in the arrays passed in.

Labels: while every label read so far is ``l<k>`` with ``k`` the op's 1-based position in its
block (what :func:`~llamp.ingest.goal.write_goal` writes when it numbers ops), a label is found
by parsing its number, and no label text is kept. The first other label switches to a hash
table per block (FNV-1a, open addressing, exact byte comparison against a per-block arena),
filled first with the ``l<k>`` labels of the block's earlier ops; from then on each op's label
text is also copied to the chunk's label output.

Numbers: integers are exact (beyond ``int64`` an event); a calc cost is converted here when it is
exact with one rounding (mantissa < 2^53, decimal exponent within ±22: Clinger's fast path),
otherwise its token is listed for Python's correctly rounded ``float()``.
"""

from __future__ import annotations

import numpy as np

from llamp.kernel import kernel

# ---- state slots (an int64 array shared with Python)
S_POS = 0  # next byte of the chunk to read
S_LINE = 1  # number of the line at S_POS
S_NV = 2  # vertices so far (global id of the next op)
S_NVC = 3  # vertices written to this chunk's columns
S_NE = 4  # edges written to this chunk's columns
S_RANK = 5  # rank of the open block, -1 outside blocks
S_BSTART = 6  # global id of the open block's first op
S_INCOM = 7  # inside a /* comment
S_COMLINE = 8  # line where that comment opened
S_CANON = 9  # every label so far is l<position>
S_CANON_UPTO = 10  # ops before this id have l<position> labels (no text kept)
S_HCOUNT = 11  # labels in the block's table
S_AUSED = 12  # bytes used in the block's label arena
S_NSLOW = 13  # costs left for Python to convert (this chunk)
S_NCN = 14  # cpu/nic entries (this chunk)
S_NBAD = 15  # ops whose label is not a valid GOAL label (this chunk)
S_LBLEN = 16  # length of the (comment-stripped) line in the line buffer
S_EVLINE = 17  # line number of the event
S_ARG = 18
S_ARG2 = 19
S_ARG3 = 20
S_NLAB = 21  # label bytes written to this chunk's label output
S_LABW = 22  # longest label so far
S_PEERMAX = 23  # largest peer read so far
S_SIZE = 24

# ---- events
EV_DONE = 0  # the chunk is read
EV_LINE = 1  # Python handles the line in the line buffer (structure, or a problem to explain)
EV_DEP = 2  # a dependency naming an unknown label (S_ARG: 1 self, 2 first label, 3 second)
EV_DUP = 3  # a duplicate label (S_ARG: global id of the first definition); the op was kept
EV_OVERFLOW = 4  # S_ARG: 0 size, 1 peer, 2 tag; S_ARG2/3: the token in the line buffer
EV_NONASCII = 5  # S_ARG: the byte
EV_ROOM = 6  # the label arena or table is full (S_ARG: offsets, S_ARG2: bytes, S_ARG3: slots)

# ---- bad-label codes
BAD_PATTERN, BAD_KEYWORD = 1, 2

#: The grammar's words, in the order :func:`scan_chunk` reads them from its ``words`` matrix.
WORDS = ("send", "recv", "calc", "requires", "irequires", "to", "from", "tag", "cpu", "nic", "b")
_WS = np.zeros(256, np.bool_)
_WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True  # what str.split() splits on in ASCII
WHITESPACE = _WS
POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)
_TWO53 = 1 << 53
_I64MAX = (1 << 63) - 1
_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211


@kernel(nogil=True)
def _eq(lb, s, e, word):  # pragma: no cover - compiled
    """lb[s:e] equals the ASCII bytes of ``word`` (a uint8 array)."""
    if e - s != word.shape[0]:
        return False
    for q in range(e - s):
        if lb[s + q] != word[q]:
            return False
    return True


@kernel(nogil=True)
def _digits(lb, s, e):  # pragma: no cover - compiled
    """(is all decimal digits and non-empty, value, beyond int64)."""
    if e <= s:
        return False, 0, False
    v = np.uint64(0)
    over = False
    for q in range(s, e):
        d = np.int64(lb[q]) - 48
        if d < 0 or d > 9:
            return False, 0, False
        if v > np.uint64(922337203685477580) or (v == np.uint64(922337203685477580) and d > 7):
            over = True
        else:
            v = v * np.uint64(10) + np.uint64(d)
    return True, np.int64(v), over


@kernel(nogil=True)
def _wild(lb, s, e):  # pragma: no cover - compiled
    return e - s == 2 and lb[s] == 45 and lb[s + 1] == 49


@kernel(nogil=True)
def _cost(lb, s, e, pow10):  # pragma: no cover - compiled
    """Match ``(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?``; returns (matches, value,
    exact) — ``exact`` False when Python must convert the token."""
    i = s
    mant = np.uint64(0)
    sig = 0
    scale = 0
    nd1 = 0
    while i < e and 48 <= lb[i] <= 57:
        d = lb[i] - 48
        if sig > 0 or d > 0:
            if sig < 19:
                mant = mant * np.uint64(10) + np.uint64(d)
            else:
                scale += 1
            sig += 1
        nd1 += 1
        i += 1
    nd2 = 0
    if i < e and lb[i] == 46:
        i += 1
        while i < e and 48 <= lb[i] <= 57:
            d = lb[i] - 48
            if sig > 0 or d > 0:
                if sig < 19:
                    mant = mant * np.uint64(10) + np.uint64(d)
                    scale -= 1
                sig += 1
            else:
                scale -= 1
            nd2 += 1
            i += 1
        if nd1 == 0 and nd2 == 0:
            return False, 0.0, False
    elif nd1 == 0:
        return False, 0.0, False
    exp = 0
    big_exp = False
    if i < e and (lb[i] == 101 or lb[i] == 69):
        i += 1
        neg = False
        if i < e and (lb[i] == 43 or lb[i] == 45):
            neg = lb[i] == 45
            i += 1
        nd3 = 0
        while i < e and 48 <= lb[i] <= 57:
            if exp < 100000:
                exp = exp * 10 + (lb[i] - 48)
            else:
                big_exp = True
            nd3 += 1
            i += 1
        if nd3 == 0:
            return False, 0.0, False
        if neg:
            exp = -exp
    if i != e:
        return False, 0.0, False
    if mant == 0:
        return True, 0.0, True
    if sig > 19 or big_exp or mant >= np.uint64(_TWO53):
        return True, 0.0, False
    e10 = exp + scale
    if e10 < -22 or e10 > 22:
        return True, 0.0, False
    if e10 >= 0:
        return True, np.float64(mant) * pow10[e10], True
    return True, np.float64(mant) / pow10[-e10], True


@kernel(nogil=True)
def _hash(b, s, e):  # pragma: no cover - compiled
    h = np.uint64(_FNV_OFFSET)
    for q in range(s, e):
        h = (h ^ np.uint64(b[q])) * np.uint64(_FNV_PRIME)
    return h


@kernel(nogil=True)
def _find(lb, s, e, h, ht_gen, ht_hash, ht_vid, gen, arena, ar_off):  # pragma: no cover
    """Local id of the label lb[s:e] in the block's table, or -1."""
    mask = ht_gen.shape[0] - 1
    slot = np.int64(h & np.uint64(mask))
    while ht_gen[slot] == gen:
        if ht_hash[slot] == h:
            v = ht_vid[slot]
            a, b = ar_off[v], ar_off[v + 1]
            if b - a == e - s:
                same = True
                for q in range(e - s):
                    if arena[a + q] != lb[s + q]:
                        same = False
                        break
                if same:
                    return np.int64(v)
        slot = (slot + 1) & mask
    return np.int64(-1)


@kernel(nogil=True)
def _insert(h, v, ht_gen, ht_hash, ht_vid, gen):  # pragma: no cover - compiled
    mask = ht_gen.shape[0] - 1
    slot = np.int64(h & np.uint64(mask))
    while ht_gen[slot] == gen:
        slot = (slot + 1) & mask
    ht_gen[slot] = gen
    ht_hash[slot] = h
    ht_vid[slot] = v


@kernel("i8[::1], u8[::1], i8[::1], i8[::1], u8[::1], i8[::1], i8", nogil=True)
def rehash(old_gen, old_hash, old_vid, ht_gen, ht_hash, ht_vid, gen):  # pragma: no cover
    """Move the live entries of the old table into the (larger, empty) new one."""
    for slot in range(old_gen.shape[0]):
        if old_gen[slot] == gen:
            _insert(old_hash[slot], old_vid[slot], ht_gen, ht_hash, ht_vid, gen)


@kernel(nogil=True)
def _ndigits(k):  # pragma: no cover - compiled
    n = 1
    while k >= 10:
        k //= 10
        n += 1
    return n


@kernel(nogil=True)
def _canonical_number(lb, s, e):  # pragma: no cover - compiled
    """k if lb[s:e] is ``l<k>`` with k ≥ 1 written without leading zeros, else 0."""
    if e - s < 2 or e - s > 19 or lb[s] != 108 or lb[s + 1] == 48:
        return 0
    k = 0
    for q in range(s + 1, e):
        d = np.int64(lb[q]) - 48
        if d < 0 or d > 9:
            return 0
        k = k * 10 + d
    return k


@kernel(nogil=True)
def _bad_label(lb, s, e, keywords):  # pragma: no cover - compiled
    """0 if lb[s:e] is ``[A-Za-z][A-Za-z0-9_]*`` and not a statement keyword, else the code."""
    c = lb[s]
    if not ((65 <= c <= 90) or (97 <= c <= 122)):
        return BAD_PATTERN
    for q in range(s + 1, e):
        c = lb[q]
        if not ((48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95):
            return BAD_PATTERN
    for k in range(keywords.shape[0]):
        n = keywords[k, 0]
        if n == e - s:
            same = True
            for q in range(n):
                if lb[s + q] != keywords[k, 1 + q]:
                    same = False
                    break
            if same:
                return BAD_KEYWORD
    return 0


@kernel(nogil=True)
def _write_canonical(k, out, at):  # pragma: no cover - compiled
    """Write ``l<k>`` at out[at:]; return its length."""
    n = _ndigits(k)
    out[at] = 108
    q = at + n
    while q > at:
        out[q] = 48 + k % 10
        k //= 10
        q -= 1
    return n + 1


@kernel(nogil=True)
def _tokens(lb, s, e, ws, ts, te):  # pragma: no cover - compiled
    """Split lb[s:e] on whitespace; store up to len(ts) tokens; return the count."""
    n = 0
    i = s
    cap = ts.shape[0]
    while True:
        while i < e and ws[lb[i]]:
            i += 1
        if i >= e:
            return n
        j = i
        while j < e and not ws[lb[j]]:
            j += 1
        if n < cap:
            ts[n] = i
            te[n] = j
        n += 1
        i = j


@kernel(
    # buffer, state, byte tables, keywords, powers of ten
    "u1[::1], i8[::1], u1[::1], b1[::1], u1[:, ::1], i8[::1], i8[:, ::1], f8[::1], "
    # vertex columns; cpu/nic entries, slow costs, bad labels; labels; edges
    "i1[::1], i8[::1], i8[::1], i8[::1], f8[::1], i8[::1], "
    "i8[::1], i2[::1], i2[::1], i8[::1], i8[::1], i8[::1], u1[::1], i8[::1], "
    "i8[::1], u1[::1], i8[::1], i8[::1], i1[::1], "
    # label table, generation, arena; the kind codes
    "i8[::1], u8[::1], i8[::1], i8, u1[::1], i8[::1], i8, i8, i8, i8, i8",
    nogil=True,
)
def scan_chunk(
    buf,
    st,
    lb,
    ws,
    words,
    wlen,
    keywords,
    pow10,
    # vertex columns of the chunk
    kind,
    size,
    peer,
    tag,
    cost,
    vline,
    # cpu/nic entries, costs left for Python, ops with bad labels (chunk-local lists)
    cn_vid,
    cn_cpu,
    cn_nic,
    slow_vid,
    slow_s,
    slow_e,
    slow_text,
    bad_vid,
    # label output of the chunk: offsets (per chunk vertex + 1) into its bytes
    clab_off,
    clab,
    # edges of the chunk
    e_src,
    e_dst,
    e_kind,
    # the open block's label table and arena
    ht_gen,
    ht_hash,
    ht_vid,
    gen,
    arena,
    ar_off,
    calc_k,
    send_k,
    recv_k,
    req_k,
    ireq_k,
):  # pragma: no cover - compiled
    """Scan the complete lines of ``buf`` from ``st[S_POS]``; return an event code (EV_*)."""
    n = buf.shape[0]
    ts = np.empty(16, np.int64)
    te = np.empty(16, np.int64)
    os_ = np.empty(16, np.int64)
    oe = np.empty(16, np.int64)
    w_send, w_recv, w_calc = words[0, : wlen[0]], words[1, : wlen[1]], words[2, : wlen[2]]
    w_req, w_ireq = words[3, : wlen[3]], words[4, : wlen[4]]
    w_to, w_from, w_tag = words[5, : wlen[5]], words[6, : wlen[6]], words[7, : wlen[7]]
    w_cpu, w_nic, w_b = words[8, : wlen[8]], words[9, : wlen[9]], words[10, : wlen[10]]
    pos = st[S_POS]
    line = st[S_LINE]
    incom = st[S_INCOM]
    while pos < n:
        # ---- the line, comments stripped, into lb
        pos0, incom0, comline0 = pos, incom, st[S_COMLINE]
        lbl = 0
        while pos < n and buf[pos] != 10:
            c = buf[pos]
            if incom:
                if c == 42 and pos + 1 < n and buf[pos + 1] == 47:
                    incom = 0
                    pos += 2
                else:
                    pos += 1
                continue
            if c == 47 and pos + 1 < n:
                nx = buf[pos + 1]
                if nx == 47:
                    while pos < n and buf[pos] != 10:
                        pos += 1
                    break
                if nx == 42:
                    incom = 1
                    st[S_COMLINE] = line
                    lb[lbl] = 32
                    lbl += 1
                    pos += 2
                    continue
            if c >= 128:
                st[S_POS] = pos
                st[S_LINE] = line
                st[S_INCOM] = incom
                st[S_EVLINE] = line
                st[S_ARG] = c
                return EV_NONASCII
            lb[lbl] = c
            lbl += 1
            pos += 1
        if pos < n:
            pos += 1  # the newline
        this_line = line
        line += 1
        st[S_LBLEN] = lbl
        st[S_EVLINE] = this_line
        nt = _tokens(lb, 0, lbl, ws, ts, te)
        if nt == 0:
            continue
        in_block = st[S_RANK] >= 0
        if not in_block:
            st[S_POS] = pos
            st[S_LINE] = line
            st[S_INCOM] = incom
            return EV_LINE
        nv = st[S_NV]
        bstart = st[S_BSTART]
        nlocal = nv - bstart
        canon = st[S_CANON] == 1
        # ---- a dependency: <A> requires|irequires <B>
        if nt == 3 and (_eq(lb, ts[1], te[1], w_req) or _eq(lb, ts[1], te[1], w_ireq)):
            ek = req_k if te[1] - ts[1] == w_req.shape[0] else ireq_k
            if canon:
                ka = _canonical_number(lb, ts[0], te[0])
                kb = _canonical_number(lb, ts[2], te[2])
                a = ka - 1 if 0 < ka <= nlocal else -1
                b = kb - 1 if 0 < kb <= nlocal else -1
            else:
                a = _find(
                    lb,
                    ts[0],
                    te[0],
                    _hash(lb, ts[0], te[0]),
                    ht_gen,
                    ht_hash,
                    ht_vid,
                    gen,
                    arena,
                    ar_off,
                )
                b = _find(
                    lb,
                    ts[2],
                    te[2],
                    _hash(lb, ts[2], te[2]),
                    ht_gen,
                    ht_hash,
                    ht_vid,
                    gen,
                    arena,
                    ar_off,
                )
            if a < 0 or b < 0 or a == b:
                st[S_POS] = pos
                st[S_LINE] = line
                st[S_INCOM] = incom
                st[S_ARG] = 1 if (a >= 0 and a == b) else (2 if a < 0 else 3)
                return EV_DEP
            ne = st[S_NE]
            e_src[ne] = bstart + b
            e_dst[ne] = bstart + a
            e_kind[ne] = ek
            st[S_NE] = ne + 1
            continue
        # ---- an op: [<label>:] send|recv|calc …
        colon = -1
        for q in range(lbl):
            if lb[q] == 58:
                colon = q
                break
        ls, le = 0, 0  # the label
        if colon >= 0:
            ls, le = 0, colon
            while ls < le and ws[lb[ls]]:
                ls += 1
            while le > ls and ws[lb[le - 1]]:
                le -= 1
            m = _tokens(lb, colon + 1, lbl, ws, os_, oe) if le > ls else 0
        else:
            if not (
                _eq(lb, ts[0], te[0], w_send)
                or _eq(lb, ts[0], te[0], w_recv)
                or _eq(lb, ts[0], te[0], w_calc)
            ):
                m = 0
            else:
                m = nt
                for q in range(min(nt, 16)):
                    os_[q] = ts[q]
                    oe[q] = te[q]
        ok = 0 < m <= 12
        k_op = calc_k
        v_size = 0
        v_peer = 0
        v_tag = 0
        v_cost = 0.0
        exact = True
        v_cpu = 0
        v_nic = 0
        over = -1
        ov_s = 0
        ov_e = 0
        if ok:
            if _eq(lb, os_[0], oe[0], w_calc):
                if m < 2:
                    ok = False
                else:
                    ok, v_cost, exact = _cost(lb, os_[1], oe[1], pow10)
                    if ok and m != 2:
                        if m == 4 and _eq(lb, os_[2], oe[2], w_cpu):
                            isd, val, big = _digits(lb, os_[3], oe[3])
                            ok = isd and not big and val <= 255
                            v_cpu = val
                        else:
                            ok = False
            elif _eq(lb, os_[0], oe[0], w_send) or _eq(lb, os_[0], oe[0], w_recv):
                is_send = lb[os_[0]] == 115
                k_op = send_k if is_send else recv_k
                i = 1
                ok = False
                if i < m:
                    s1, e1 = os_[i], oe[i]
                    if e1 - s1 >= 2 and lb[e1 - 1] == 98:
                        isd, v_size, big = _digits(lb, s1, e1 - 1)
                        if isd:
                            ok = True
                            i += 1
                            if big:
                                over, ov_s, ov_e = 0, s1, e1 - 1
                    if not ok and i + 1 < m and _eq(lb, os_[i + 1], oe[i + 1], w_b):
                        isd, v_size, big = _digits(lb, s1, e1)
                        if isd:
                            ok = True
                            i += 2
                            if big:
                                over, ov_s, ov_e = 0, s1, e1
                if ok:
                    ok = i < m and _eq(lb, os_[i], oe[i], w_to if is_send else w_from)
                    i += 1
                if ok:
                    ok = i < m
                    if ok:
                        isd, v_peer, big = _digits(lb, os_[i], oe[i])
                        if isd:
                            if big and over < 0:
                                over, ov_s, ov_e = 1, os_[i], oe[i]
                        elif not is_send and _wild(lb, os_[i], oe[i]):
                            v_peer = -1
                        else:
                            ok = False
                        i += 1
                if ok and i < m and _eq(lb, os_[i], oe[i], w_tag):
                    ok = i + 1 < m
                    if ok:
                        isd, v_tag, big = _digits(lb, os_[i + 1], oe[i + 1])
                        if isd:
                            if big and over < 0:
                                over, ov_s, ov_e = 2, os_[i + 1], oe[i + 1]
                        elif not is_send and _wild(lb, os_[i + 1], oe[i + 1]):
                            v_tag = -1
                        else:
                            ok = False
                    i += 2
                if ok and i < m and _eq(lb, os_[i], oe[i], w_cpu):
                    ok = i + 1 < m
                    if ok:
                        isd, v_cpu, big = _digits(lb, os_[i + 1], oe[i + 1])
                        ok = isd and not big and v_cpu <= 255
                    i += 2
                if ok and i < m and _eq(lb, os_[i], oe[i], w_nic):
                    ok = i + 1 < m
                    if ok:
                        isd, v_nic, big = _digits(lb, os_[i + 1], oe[i + 1])
                        ok = isd and not big and v_nic <= 255
                    i += 2
                if ok and i < m:
                    ok = False
            else:
                ok = False
        if not ok:
            st[S_POS] = pos
            st[S_LINE] = line
            st[S_INCOM] = incom
            return EV_LINE
        if over >= 0:
            st[S_POS] = pos
            st[S_LINE] = line
            st[S_INCOM] = incom
            st[S_ARG] = over
            st[S_ARG2] = ov_s
            st[S_ARG3] = ov_e
            return EV_OVERFLOW
        # ---- the label: canonical while it can be, else the table (room checked first)
        llen = le - ls
        k = _canonical_number(lb, ls, le) if llen else 0
        flip = canon and k != nlocal + 1
        if flip or not canon:
            need_off = nlocal + 2
            need_bytes = st[S_AUSED] + llen
            need_slots = 2 * (st[S_HCOUNT] + 1)
            if flip:
                need_bytes = nlocal * (_ndigits(nlocal) + 1) + llen
                need_slots = 2 * (nlocal + 1)
            if (
                ar_off.shape[0] < need_off
                or arena.shape[0] < need_bytes
                or ht_gen.shape[0] < need_slots
            ):
                st[S_POS] = pos0
                st[S_LINE] = this_line
                st[S_INCOM] = incom0
                st[S_COMLINE] = comline0
                st[S_ARG] = need_off
                st[S_ARG2] = need_bytes
                st[S_ARG3] = need_slots
                return EV_ROOM
        if flip:
            # the block's earlier ops were l1 … l<nlocal>: put them in the table
            used = 0
            ar_off[0] = 0
            for j in range(nlocal):
                w = _write_canonical(j + 1, arena, used)
                _insert(_hash(arena, used, used + w), j, ht_gen, ht_hash, ht_vid, gen)
                used += w
                ar_off[j + 1] = used
            st[S_AUSED] = used
            st[S_HCOUNT] = nlocal
            st[S_CANON] = 0
            st[S_CANON_UPTO] = nv
            canon = False
        nvc = st[S_NVC]
        dup = -1
        if not canon:
            a0 = st[S_AUSED]
            for q in range(llen):
                arena[a0 + q] = lb[ls + q]
            ar_off[nlocal] = a0
            ar_off[nlocal + 1] = a0 + llen
            st[S_AUSED] = a0 + llen
            if llen:
                h = _hash(lb, ls, le)
                dup = _find(lb, ls, le, h, ht_gen, ht_hash, ht_vid, gen, arena, ar_off)
                if dup < 0:
                    _insert(h, nlocal, ht_gen, ht_hash, ht_vid, gen)
                    st[S_HCOUNT] += 1
                code = _bad_label(lb, ls, le, keywords)
                if code:
                    nb = st[S_NBAD]
                    bad_vid[nb] = nv
                    st[S_NBAD] = nb + 1
            c0 = st[S_NLAB]
            for q in range(llen):
                clab[c0 + q] = lb[ls + q]
            st[S_NLAB] = c0 + llen
            if llen > st[S_LABW]:
                st[S_LABW] = llen
        elif llen > st[S_LABW]:
            st[S_LABW] = llen
        clab_off[nvc + 1] = st[S_NLAB]
        kind[nvc] = k_op
        size[nvc] = v_size
        peer[nvc] = v_peer
        tag[nvc] = v_tag
        cost[nvc] = v_cost
        vline[nvc] = this_line
        if v_peer > st[S_PEERMAX]:
            st[S_PEERMAX] = v_peer
        if not exact:
            ns = st[S_NSLOW]
            start = 0 if ns == 0 else slow_e[ns - 1]
            for q in range(oe[1] - os_[1]):
                slow_text[start + q] = lb[os_[1] + q]
            slow_vid[ns] = nvc
            slow_s[ns] = start
            slow_e[ns] = start + oe[1] - os_[1]
            st[S_NSLOW] = ns + 1
        if v_cpu or v_nic:
            c = st[S_NCN]
            cn_vid[c] = nv
            cn_cpu[c] = v_cpu
            cn_nic[c] = v_nic
            st[S_NCN] = c + 1
        st[S_NVC] = nvc + 1
        st[S_NV] = nv + 1
        if dup >= 0:
            st[S_POS] = pos
            st[S_LINE] = line
            st[S_INCOM] = incom
            st[S_ARG] = bstart + dup
            return EV_DUP
    st[S_POS] = pos
    st[S_LINE] = line
    st[S_INCOM] = incom
    return EV_DONE


@kernel("i8[::1], i4[::1], i8, i8, u4[:, ::1]", nogil=True)
def canonical_labels(bstart_of, rank, n0, n1, out):  # pragma: no cover - compiled
    """Fill out[v - n0, :] (UCS-4 code points) with ``l<position in block>`` for v in [n0, n1)."""
    for v in range(n0, n1):
        k = v - bstart_of[rank[v]] + 1
        nd = _ndigits(k)
        row = v - n0
        out[row, 0] = 108
        q = nd
        while q > 0:
            out[row, q] = 48 + k % 10
            k //= 10
            q -= 1


@kernel("u1[::1], i8[::1], u4[:, ::1], i8", nogil=True)
def text_labels(clab, clab_off, out, row0):  # pragma: no cover - compiled
    """Fill out[row0 + i, :] with the bytes clab[clab_off[i]:clab_off[i + 1]]."""
    for i in range(clab_off.shape[0] - 1):
        a = clab_off[i]
        for q in range(clab_off[i + 1] - a):
            out[row0 + i, q] = clab[a + q]
