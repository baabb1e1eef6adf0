/* The loops of the _speedups extension over a block's rows: the duplicate check of short queries,
   the key lookup within a query's range, the IDCG by label, the exact sums, a ranked run's ties
   (see _speedups.c for what every loop promises, _speedups.h for the contract: a result, or None
   to decline). */
#include "_speedups.h"

/* distinct_small(fp, codes, width, most): duplicates.distinct_within_small_queries: True when
   the codes (int32 or int64) count queries from 0 in runs (each query one run, the next code
   one more) of at most `most` rows, and no run holds a fingerprint twice; else False (numpy's
   answer too). None when the arguments disagree. */
PyObject *ndcg_distinct_small(PyObject *self, PyObject *args) {
    Py_buffer fp, codes;
    int width, most;
    if (!PyArg_ParseTuple(args, "y*y*ii", &fp, &codes, &width, &most)) return NULL;
    PyObject *result = NULL;
    int64_t n = fp.len / 8;
    if (!check_width(width) || fp.len % 8 || !holds(codes.len, width, n) || most < 1 || most > 4096) {
        result = declined();
        goto done;
    }
    const uint64_t *f = fp.buf;
    int distinct = n >= 2 && offset_at(codes.buf, width, 0) == 0;
    /* a query of more than 64 rows: a table of 2^bits >= 2 * most slots, marked by turn too */
    int bits = 7;
    while ((1 << bits) < 2 * most) bits++;
    uint64_t mask = (UINT64_C(1) << bits) - 1;
    uint64_t *seen = distinct && most > 64 ? PyMem_RawMalloc(sizeof(uint64_t) * (size_t)(mask + 1)) : NULL;
    int64_t *seen_turn = distinct && most > 64 ? PyMem_RawCalloc((size_t)(mask + 1), sizeof(int64_t)) : NULL;
    if (distinct && most > 64 && (seen == NULL || seen_turn == NULL)) {
        PyMem_RawFree(seen); PyMem_RawFree(seen_turn); PyErr_NoMemory(); goto done;
    }
    uint64_t slot_fp[128];
    int64_t slot_turn[128], turn = 0;
    for (int i = 0; i < 128; i++) slot_turn[i] = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t a = 0;
    while (distinct && a < n) {
        int64_t q = offset_at(codes.buf, width, a), b = a + 1;
        while (b < n && offset_at(codes.buf, width, b) == q) b++;
        if ((b < n && offset_at(codes.buf, width, b) != q + 1) || b - a > most) { distinct = 0; break; }
        int64_t k = b - a;
        if (k <= 64) {  /* into a table of 128 slots, marked by the query's turn: no clearing */
            turn++;
            for (int64_t i = a; i < b && distinct; i++) {
                uint64_t v = f[i];
                unsigned s = (unsigned)((v * UINT64_C(0x9E3779B97F4A7C15)) >> 57);
                while (slot_turn[s] == turn && slot_fp[s] != v) s = (s + 1) & 127;
                if (slot_turn[s] == turn) distinct = 0;
                slot_turn[s] = turn;
                slot_fp[s] = v;
            }
        } else {
            turn++;
            for (int64_t i = a; i < b && distinct; i++) {
                uint64_t v = f[i];
                uint64_t s = (v * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - bits);
                while (seen_turn[s] == turn && seen[s] != v) s = (s + 1) & mask;
                if (seen_turn[s] == turn) distinct = 0;
                seen_turn[s] = turn;
                seen[s] = v;
            }
        }
        a = b;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(seen);
    PyMem_RawFree(seen_turn);
    result = PyBool_FromLong(distinct);
done:
    PyBuffer_Release(&fp); PyBuffer_Release(&codes);
    return result;
}

/* The position of key v among the sorted, distinct keys k[lo:end], or -1: a bisection down to 8
   keys, then a scan of so few keys without a branch (its length repeats over a query's rows). */
static inline int64_t key_in_range(const uint64_t *k, int64_t lo, int64_t end, uint64_t v) {
    int64_t hi = end;
    while (hi - lo > 8) {  /* the first key >= v lies in [lo, hi] */
        int64_t mid = lo + (hi - lo) / 2;
        if (k[mid] < v) lo = mid + 1; else hi = mid;
    }
    int64_t at = -1;
    for (int64_t j = lo; j < hi; j++) at = k[j] == v ? j : at;
    return at < 0 && hi < end && k[hi] == v ? hi : at;
}

/* find_in_ranges(keys, starts, codes, width, needles, out) -> True or None: out[i] = the position
   of needles[i] in keys[starts[c]:starts[c + 1]] (c = codes[i]; sorted, distinct uint64 keys), or
   -1; None when a needle's code has no range of keys. */
PyObject *ndcg_find_in_ranges(PyObject *self, PyObject *args) {
    Py_buffer keys, starts, codes, needles, out;
    int width;
    if (!PyArg_ParseTuple(args, "y*y*y*iy*w*", &keys, &starts, &codes, &width, &needles, &out)) return NULL;
    PyObject *result = NULL;
    int64_t n = needles.len / 8, nk = keys.len / 8, ns = starts.len / 8 - 1, bad = -1;
    if (!check_width(width) || needles.len % 8 || !holds(out.len, 8, n) || !holds(codes.len, width, n) || ns < 0) {
        result = declined();
        goto done;
    }
    const uint64_t *k = keys.buf, *x = needles.buf;
    const int64_t *st = starts.buf;
    int64_t *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t c = offset_at(codes.buf, width, i);
        if (c < 0 || c >= ns) { bad = i; break; }
        int64_t lo = st[c], end = st[c + 1];
        if (lo < 0 || end < lo || end > nk) { bad = i; break; }
        o[i] = key_in_range(k, lo, end, x[i]);
    }
    Py_END_ALLOW_THREADS
    result = bad >= 0 ? declined() : Py_NewRef(Py_True);  /* bad: a needle with no range of keys */
done:
    PyBuffer_Release(&keys); PyBuffer_Release(&starts); PyBuffer_Release(&codes);
    PyBuffer_Release(&needles); PyBuffer_Release(&out);
    return result;
}

/* ideal_dcg(codes, labels, cutoff, gain, tables, discount, out) -> True or None: ndcg.ideal_by_label and the
   IDCG sum over it, for `tables` gains at once (the variants share the order by label): for
   each run of equal codes (int64, never decreasing), its labels > 0 sorted descending, the first
   `cutoff` (all for -1) added in that order, out[t][code] += gain[t][label] / discount[rank]
   (gain: `tables` rows indexed by label, out: `tables` rows indexed by code; discount by rank:
   numpy's own doubles). None, with nothing written, when the codes decrease somewhere, a code or
   a label is out of range, no label would be added (no label > 0, or a cutoff of 0: numpy's
   bincount of no weights gives integers, not these doubles), or the sizes disagree (`tables` rows of 8-byte doubles, the row's
   size computed in Py_ssize_t: declined where it would overflow). */
static int desc_int64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

PyObject *ndcg_ideal_dcg(PyObject *self, PyObject *args) {
    Py_buffer codes, labels, gain, disc, out;
    long long cutoff;
    Py_ssize_t tables;
    if (!PyArg_ParseTuple(args, "y*y*Ly*ny*w*", &codes, &labels, &cutoff, &gain, &tables, &disc, &out)) return NULL;
    PyObject *result = NULL;
    if (tables < 1 || tables > PY_SSIZE_T_MAX / 8 || gain.len % (8 * tables) || out.len % (8 * tables)
        || codes.len % 8 || labels.len != codes.len || disc.len % 8) {
        result = declined();
        goto done;
    }
    int64_t n = codes.len / 8, nq = out.len / 8 / tables, ng = gain.len / 8 / tables, nd = disc.len / 8, longest = 0,
            positive = 0;
    const int64_t *q = codes.buf, *l = labels.buf;
    const double *g = gain.buf, *dc = disc.buf;
    double *o = out.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t a = 0, b; ok && a < n; a = b) {  /* check every code and label first, and size the scratch */
        for (b = a; b < n && q[b] == q[a]; b++)
            if (l[b] >= ng) ok = 0; else positive += l[b] > 0;
        if (q[a] < 0 || q[a] >= nq || (b < n && q[b] < q[a])) ok = 0;
        if (b - a > longest) longest = b - a;
    }
    Py_END_ALLOW_THREADS
    int64_t depth = cutoff < 0 || cutoff > longest ? longest : cutoff;
    if (!ok || depth > nd || positive == 0 || cutoff == 0) { result = declined(); goto done; }
    int64_t *scratch = PyMem_RawMalloc(sizeof(int64_t) * (size_t)(longest > 0 ? longest : 1));
    if (scratch == NULL) { PyErr_NoMemory(); goto done; }
    Py_BEGIN_ALLOW_THREADS
    for (int64_t a = 0, b; a < n; a = b) {
        int64_t k = 0;
        for (b = a; b < n && q[b] == q[a]; b++)
            if (l[b] > 0) scratch[k++] = l[b];
        if (k <= 32) {
            for (int64_t i = 1; i < k; i++) {  /* insertion sort, descending */
                int64_t v = scratch[i], j = i;
                while (j > 0 && scratch[j - 1] < v) { scratch[j] = scratch[j - 1]; j--; }
                scratch[j] = v;
            }
        } else {
            qsort(scratch, (size_t)k, sizeof(int64_t), desc_int64);
        }
        int64_t top = cutoff < 0 || cutoff > k ? k : cutoff;
        for (Py_ssize_t t = 0; t < tables; t++) {
            const double *gt = g + t * ng;
            double sum = o[t * nq + q[a]];
            for (int64_t r = 0; r < top; r++) sum += gt[scratch[r]] / dc[r];
            o[t * nq + q[a]] = sum;
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(scratch);
    result = Py_NewRef(Py_True);
done:
    PyBuffer_Release(&codes); PyBuffer_Release(&labels); PyBuffer_Release(&gain);
    PyBuffer_Release(&disc); PyBuffer_Release(&out);
    return result;
}

/* split_sums(values): exact.split_sums: [(E, sum of hi, sum of mid, sum of lo, count)] for each
   E among the values (float64), E increasing, summed in int64 (each piece is below 2^18 in
   magnitude: exact for up to 2^35 values, which the caller ensures); None for a value that is
   not finite (numpy's definition then refuses it by name) or a buffer of no whole doubles. */
PyObject *ndcg_split_sums(PyObject *self, PyObject *args) {
    Py_buffer values;
    if (!PyArg_ParseTuple(args, "y*", &values)) return NULL;
    if (values.len % 8) { PyBuffer_Release(&values); return declined(); }
    int64_t n = values.len / 8;
    int64_t (*sums)[4] = PyMem_RawCalloc(2047, sizeof *sums);
    if (sums == NULL) { PyBuffer_Release(&values); return PyErr_NoMemory(); }
    const double *v = values.buf;
    int finite = 1;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t bits;
        memcpy(&bits, &v[i], 8);
        int64_t biased = (bits >> 52) & 0x7FF, fraction = bits & ((INT64_C(1) << 52) - 1);
        if (biased == 0x7FF) { finite = 0; break; }
        int64_t m = biased > 0 ? fraction | (INT64_C(1) << 52) : fraction;
        if (bits < 0) m = -m;
        int64_t e = biased > 0 ? biased - 1 : 0;
        int64_t lo = (int64_t)((uint64_t)m & 0x3FFFF), mid = (int64_t)(((uint64_t)m >> 18) & 0x3FFFF);
        int64_t hi = (m - mid * (INT64_C(1) << 18) - lo) / (INT64_C(1) << 36);  /* exact: a floor */
        sums[e][0] += hi; sums[e][1] += mid; sums[e][2] += lo; sums[e][3] += 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&values);
    PyObject *out = NULL;
    if (!finite) {
        out = declined();
    } else if ((out = PyList_New(0)) != NULL) {
        for (int e = 0; e < 2047; e++) {
            if (!sums[e][3]) continue;
            PyObject *t = Py_BuildValue("(iLLLL)", e, (long long)sums[e][0], (long long)sums[e][1],
                                        (long long)sums[e][2], (long long)sums[e][3]);
            if (t == NULL || PyList_Append(out, t) < 0) { Py_XDECREF(t); Py_CLEAR(out); break; }
            Py_DECREF(t);
        }
    }
    PyMem_RawFree(sums);
    return out;
}

/* tied_rows(group, width, score, out) -> count or None: the rows (int64, ascending, into out) that
   tie with a neighbour, one of the same group (int32 or int64) and the same score; how many. */
PyObject *ndcg_tied_rows(PyObject *self, PyObject *args) {
    Py_buffer group, score, out;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*w*", &group, &width, &score, &out)) return NULL;
    PyObject *result = NULL;
    int64_t n = score.len / 8, k = 0;
    if (!check_width(width) || score.len % 8 || !holds(group.len, width, n) || !holds(out.len, 8, n)) {
        result = declined();
        goto done;
    }
    const double *sc = score.buf;
    int64_t *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    int prev = 0;  /* row i - 1 ties with row i - 2 */
    for (int64_t i = 1; i < n; i++) {
        int tie = offset_at(group.buf, width, i) == offset_at(group.buf, width, i - 1) && sc[i] == sc[i - 1];
        if (tie && !prev) o[k++] = i - 1;
        if (tie) o[k++] = i;
        prev = tie;
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(k);
done:
    PyBuffer_Release(&group); PyBuffer_Release(&score); PyBuffer_Release(&out);
    return result;
}

/* Whether tied row a (its position in rows) goes before tied row b: a larger head, or the same head
   and a larger length (doc ids of at most 8 bytes, descending). */
static inline int tie_before(const uint64_t *h, const int64_t *len, int64_t a, int64_t b) {
    return h[a] > h[b] || (h[a] == h[b] && len[a] > len[b]);
}

/* The positions at[0..m) sorted by tie_before, stably: insertion for a few, else a bottom-up
   merge sort through tmp (m more positions): n log n comparisons, not the n^2 of an insertion
   sort on a long run of ties (a query whose scores are all equal). */
static void sort_tied(int64_t *at, int64_t *tmp, int64_t m, const uint64_t *h, const int64_t *len) {
    if (m <= 16) {
        for (int64_t i = 1; i < m; i++) {
            int64_t v = at[i], j = i;
            while (j > 0 && tie_before(h, len, v, at[j - 1])) { at[j] = at[j - 1]; j--; }
            at[j] = v;
        }
        return;
    }
    int64_t *src = at, *dst = tmp;
    for (int64_t width = 1; width < m; width *= 2) {
        for (int64_t lo = 0; lo < m; lo += 2 * width) {
            int64_t mid = lo + width < m ? lo + width : m, hi = lo + 2 * width < m ? lo + 2 * width : m;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) dst[k++] = tie_before(h, len, src[j], src[i]) ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        int64_t *swap = src; src = dst; dst = swap;
    }
    if (src != at) memcpy(at, src, sizeof(int64_t) * (size_t)m);
}

/* sort_ties(group, width, score, rows, head, length, order) -> True or None (for a row that is not
   one, or sizes that disagree): each run of rows (from tied_rows:
   neighbours of one group and one score) put in order by doc id descending, stably: by head
   (the id's first 8 bytes, big-endian) descending, then length descending (ids of at most 8
   bytes); order[rows[a + i]] = the row that takes that place. A merge sort (sort_tied): n log n
   on a run of any length, as numpy's stable sort. */
PyObject *ndcg_sort_ties(PyObject *self, PyObject *args) {
    Py_buffer group, score, rows, head, length, order;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*y*y*y*w*", &group, &width, &score, &rows, &head, &length, &order)) return NULL;
    PyObject *result = NULL;
    int64_t n = score.len / 8, k = rows.len / 8, bad = -1;
    if (!check_width(width) || score.len % 8 || rows.len % 8 || !holds(group.len, width, n)
        || !holds(order.len, 8, n) || !holds(head.len, 8, k) || !holds(length.len, 8, k)) {
        result = declined();
        goto done;
    }
    int64_t *at = PyMem_RawMalloc(sizeof(int64_t) * 2 * (size_t)(k > 0 ? k : 1));  /* k <= n: no overflow */
    if (at == NULL) { PyErr_NoMemory(); goto done; }
    const double *sc = score.buf;
    const int64_t *r = rows.buf, *len = length.buf;
    const uint64_t *h = head.buf;
    int64_t *o = order.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t a = 0, b; a < k; a = b) {
        if (r[a] < 0 || r[a] >= n) { bad = a; break; }
        for (b = a + 1; b < k && r[b] == r[b - 1] + 1 && r[b] < n
             && offset_at(group.buf, width, r[b]) == offset_at(group.buf, width, r[a]) && sc[r[b]] == sc[r[a]]; b++) {}
        for (int64_t i = a; i < b; i++) at[i - a] = i;
        sort_tied(at, at + k, b - a, h, len);
        for (int64_t i = a; i < b; i++) o[r[i]] = r[at[i - a]];
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(at);
    result = bad >= 0 ? declined() : Py_NewRef(Py_True);  /* bad: a tied row that is not a row */
done:
    PyBuffer_Release(&group); PyBuffer_Release(&score); PyBuffer_Release(&rows);
    PyBuffer_Release(&head); PyBuffer_Release(&length); PyBuffer_Release(&order);
    return result;
}

/* find_pairs(keys, starts, group, width, codes, fp, shift, rows, at) -> count or None: the pairs of
   QrelsIndex.labels found among a qrels index's keys, row i's pair key made here as pair_keys
   makes it: (codes[group[i]] << shift) | (fp[i] >> (64 - shift)), looked up among the keys of
   its code as find_in_ranges does. The rows found (ascending) into rows, their positions into
   at (both int64); None when a group or a code has no range, or the sizes disagree. */
PyObject *ndcg_find_pairs(PyObject *self, PyObject *args) {
    Py_buffer keys, starts, group, codes, fp, rows, at;
    int width, shift;
    if (!PyArg_ParseTuple(args, "y*y*y*iy*y*iw*w*", &keys, &starts, &group, &width, &codes, &fp, &shift, &rows, &at))
        return NULL;
    PyObject *result = NULL;
    int64_t n = fp.len / 8, nk = keys.len / 8, ns = starts.len / 8 - 1, nc = codes.len / 8, found = 0;
    if (!check_width(width) || fp.len % 8 || !holds(group.len, width, n) || !holds(rows.len, 8, n)
        || !holds(at.len, 8, n) || ns < 0 || shift < 1 || shift > 63) {
        result = declined();
        goto done;
    }
    const uint64_t *k = keys.buf, *f = fp.buf;
    const int64_t *st = starts.buf, *cm = codes.buf;
    int64_t *ro = rows.buf, *ao = at.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t g = offset_at(group.buf, width, i);
        if (g < 0 || g >= nc) { ok = 0; break; }
        int64_t c = cm[g];
        if (c < 0 || c >= ns) { ok = 0; break; }
        int64_t lo = st[c], end = st[c + 1];
        if (lo < 0 || end < lo || end > nk) { ok = 0; break; }
        int64_t pos = key_in_range(k, lo, end, ((uint64_t)c << shift) | (f[i] >> (64 - shift)));
        ro[found] = i;
        ao[found] = pos;
        found += pos >= 0;
    }
    Py_END_ALLOW_THREADS
    result = ok ? PyLong_FromLongLong(found) : declined();
done:
    PyBuffer_Release(&keys); PyBuffer_Release(&starts); PyBuffer_Release(&group); PyBuffer_Release(&codes);
    PyBuffer_Release(&fp); PyBuffer_Release(&rows); PyBuffer_Release(&at);
    return result;
}
